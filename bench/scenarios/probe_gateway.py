"""A tensorgate started for one hostile-caller probe (``python -m bench probes``): its models
from a config file, its REST port on, its Prometheus page and bearer tokens when asked, and what
the probes read of it — front-end processes, their memory, the metrics page.

Everything binds 127.0.0.1 (the gateway's default). :meth:`ProbeGateway.kill` ends a gateway
whose workers were left computing on purpose (a stop would wait for their runs).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.measure.usage import by_role, reset_peak, rss_bytes, status_bytes
from bench.systems.procs import Server, start_with_ready_fd

MIB = 2**20
METRICS_PATH = "/monitoring/prometheus/metrics"
TOKEN = "probe-token"
"""The bearer token of a gateway started with ``tokens=True``."""


@dataclass
class ProbeGateway:
    """A running gateway: its ports, how long it took to report ready, and its metrics page."""

    server: Server
    grpc_port: int
    rest_port: int
    ready_s: float
    metrics: bool

    @property
    def pid(self) -> int:
        return self.server.pid

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def front_ends(self) -> list[int]:
        """The processes that serve calls: the front ends of a supervisor, else the one
        gateway process."""
        return by_role(self.pid)["front end"] or [self.pid]

    def front_end_rss_mb(self) -> list[float]:
        """Each front end's resident memory (MiB), in pid order."""
        return [rss_bytes(pid) / MIB for pid in self.front_ends()]

    def peak_rss_mb(self) -> float:
        """The largest ``VmHWM`` (MiB) of the front ends: their peak resident memory since
        :meth:`reset_peak` (or their start)."""
        return max(status_bytes(pid, "VmHWM") for pid in self.front_ends()) / MIB

    def reset_peak(self) -> None:
        """Start the front ends' peak memory afresh from their present memory (``clear_refs``)."""
        for pid in self.front_ends():
            reset_peak(pid)

    def page(self) -> str:
        """The metrics page (needs ``metrics``); "" when it does not answer."""
        url = f"http://127.0.0.1:{self.rest_port}{METRICS_PATH}"
        try:
            with urllib.request.urlopen(url, timeout=60) as answer:
                return str(answer.read().decode())
        except (OSError, urllib.error.URLError):
            return ""

    def stop(self) -> None:
        self.server.stop()

    def kill(self) -> None:
        """SIGKILL the gateway's whole process group and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.server.pid, signal.SIGKILL)
        self.server.process.wait()
        self.server.stop()  # reaps what is left, removes its folders


def start_gateway(
    root: Path,
    name: str,
    models: Mapping[str, Path],
    flags: Sequence[str] = (),
    *,
    frontends: int = 1,
    workers: int = 1,
    metrics: bool = False,
    tokens: bool = False,
) -> ProbeGateway:
    """Start a gateway serving ``models`` (name → base path) with ``flags``; files and log under
    ``root`` named after ``name``. Raises :class:`~bench.systems.procs.StartFailed`."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / f"{name}.config"
    config.write_text(model_config(models))
    argv = [
        sys.executable, "-m", "gateway",
        f"--model_config_file={config}",
        "--port=0", "--rest_api_port=-1",
        f"--workers={workers}", f"--frontends={frontends}",
    ]  # fmt: skip
    if metrics:
        monitoring = root / f"{name}-monitoring.pbtxt"
        monitoring.write_text(f'prometheus_config {{ enable: true path: "{METRICS_PATH}" }}\n')
        argv.append(f"--monitoring_config_file={monitoring}")
    if tokens:
        token_file = root / f"{name}-tokens.txt"
        token_file.write_text(TOKEN + "\n")
        argv.append(f"--auth_token_file={token_file}")
    argv += flags
    began = time.monotonic()
    server, info = start_with_ready_fd(name, argv, root / f"{name}.log")
    return ProbeGateway(
        server,
        int(str(info["grpc_port"])),
        int(str(info["rest_port"])),
        time.monotonic() - began,
        metrics,
    )


def model_config(models: Mapping[str, Path]) -> str:
    """A ModelServerConfig (text format) serving each of ``models`` (name → base path)."""
    entries = "".join(
        f'  config {{ name: "{name}" base_path: "{path}" model_platform: "onnx" }}\n'
        for name, path in models.items()
    )
    return f"model_config_list {{\n{entries}}}\n"


def samples(page: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of metric ``name`` on a Prometheus text ``page``: (labels, value) each."""
    found = []
    for line in page.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        metric, _, rest = head.partition("{")
        if metric != name:
            continue
        labels = {}
        for pair in rest.rstrip("}").split('",'):
            key, _, text = pair.partition('="')
            if key:
                labels[key.strip(",")] = text.rstrip('"')
        found.append((labels, float(value)))
    return found


def settle(gateway: ProbeGateway, *, timeout_s: float = 60.0, steady_s: float = 3.0) -> float:
    """Wait until the front ends' memory holds still (loads and measurements after readiness
    done): every 0.5 s sample within 1 MiB of the others for ``steady_s``, at most
    ``timeout_s``. The seconds waited."""
    began = time.monotonic()
    window: list[float] = []
    need = max(2, int(steady_s / 0.5))
    while time.monotonic() - began < timeout_s:
        window = [*window[-(need - 1) :], sum(gateway.front_end_rss_mb())]
        if len(window) == need and max(window) - min(window) < 1.0:
            break
        time.sleep(0.5)  # memory has no event to wait on; bounded by timeout_s
    return time.monotonic() - began
