"""The h2load driver (Debian ``nghttp2-client``): the highest request rates, from C.

gRPC over h2c: the request is pre-encoded as one gRPC frame (flag byte 0, 4-byte big-endian
length, message) and POSTed with ``content-type: application/grpc`` and ``te: trailers``.
h2load ignores trailers, so it cannot see ``grpc-status``; the harness checks it separately
(:func:`ok_fraction` compares response bytes per request with a calibration run whose status was
verified over gRPC; an error response carries no DATA). HTTP/1.1 targets use ``--h1``.

Latency percentiles come from h2load's ``--log-file`` (one line per request of the main phase:
start µs since the epoch, HTTP status, duration µs). Its own CPU time is taken from ``wait4``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cpus import pinned
from bench.load.histogram import Histogram

GRPC_HEADERS = ("content-type: application/grpc", "te: trailers")


def available() -> str | None:
    """Path of the ``h2load`` binary, or None (install: ``apt-get install nghttp2-client``)."""
    return shutil.which("h2load")


def grpc_frame(message: bytes) -> bytes:
    """One uncompressed gRPC length-prefixed message."""
    return b"\x00" + len(message).to_bytes(4, "big") + message


@dataclass(frozen=True)
class H2loadRun:
    """One h2load invocation (closed loop: ``connections × streams`` requests in flight)."""

    url: str
    body: bytes
    connections: int
    streams: int = 1
    duration_s: float = 3.0
    warmup_s: float = 1.0
    total: int = 0
    """Requests to send instead of a duration (0: use the duration)."""
    h1: bool = False
    headers: tuple[str, ...] = GRPC_HEADERS
    cpus: tuple[int, ...] = ()
    timeout_s: float = 120.0

    def argv(self, body_path: Path, log_path: Path) -> list[str]:
        args = ["h2load", "-c", str(self.connections), "-m", str(self.streams)]
        if self.total:
            args += ["-n", str(self.total)]
        else:
            args += [
                "-D",
                f"{round(self.duration_s * 1000)}ms",
                f"--warm-up-time={round(self.warmup_s * 1000)}ms",
            ]
        for header in self.headers:
            args += ["-H", header]
        if self.h1:
            args.append("--h1")
        args += ["-d", str(body_path), f"--log-file={log_path}", self.url]
        return pinned(args, self.cpus)


_FINISHED = re.compile(r"finished in ([\d.]+)(s|ms|us), ([\d.]+) req/s")
_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_REQUESTS = re.compile(
    r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
    r"(\d+) errored, (\d+) timeout"
)
_STATUS = re.compile(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx")
_TRAFFIC = re.compile(r"traffic: .*?\((\d+)\) total, .*?\((\d+)\) headers.*?\((\d+)\) data")


def parse_output(text: str) -> dict[str, Any]:
    """The numbers of h2load's summary; raises ValueError if the summary is missing."""
    finished = _FINISHED.search(text)
    requests = _REQUESTS.search(text)
    if not finished or not requests:
        raise ValueError(f"h2load printed no summary:\n{text[-2000:]}")
    total, _started, done, ok, failed, errored, timeouts = (int(g) for g in requests.groups())
    out: dict[str, Any] = {
        "elapsed_s": float(finished.group(1)) * _TIME_UNITS[finished.group(2)],
        "rps": float(finished.group(3)),
        "requests": total,
        "done": done,
        "succeeded": ok,
        "failed": failed,
        "errored": errored,
        "timeout": timeouts,
    }
    status = _STATUS.search(text)
    if status:
        out["http_2xx"], out["http_3xx"], out["http_4xx"], out["http_5xx"] = (
            int(g) for g in status.groups()
        )
    traffic = _TRAFFIC.search(text)
    if traffic:
        out["bytes_total"], out["bytes_headers"], out["bytes_data"] = (
            int(g) for g in traffic.groups()
        )
    return out


def parse_log(text: str) -> Histogram:
    """Latency histogram of the 2xx requests in an h2load ``--log-file``."""
    hist = Histogram()
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1].startswith("2"):
            hist.record(int(parts[2]) * 1000)
    return hist


def run(spec: H2loadRun) -> dict[str, Any]:
    """Run h2load; return its numbers, latency percentiles (ms) and its own CPU use.

    Raises RuntimeError if h2load fails or prints no summary.
    """
    with tempfile.TemporaryDirectory(prefix="bench-h2load-") as tmp:
        body_path, log_path = Path(tmp) / "body.bin", Path(tmp) / "requests.log"
        body_path.write_bytes(spec.body)
        began = time.monotonic()
        proc = subprocess.Popen(
            spec.argv(body_path, log_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            stdout, _ = proc.communicate(timeout=spec.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise RuntimeError(f"h2load ran past {spec.timeout_s:.0f} s") from None
        wall_s = time.monotonic() - began
        text = stdout.decode(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"h2load exited with {proc.returncode}:\n{text[-2000:]}")
        result = parse_output(text)
        hist = parse_log(log_path.read_text()) if log_path.exists() else Histogram()
    result["latency_ms"] = {f"p{p}": hist.percentile(p) / 1e6 for p in (50, 90, 99)} | {
        "mean": hist.mean_ns / 1e6,
        "max": hist.max_ns / 1e6,
    }
    result["wall_s"] = wall_s
    return result


def run_measured(spec: H2loadRun) -> dict[str, Any]:
    """:func:`run`, adding ``client_cpu_s`` / ``client_cpu_cores`` (h2load's own CPU time)."""
    before = os.times()
    result = run(spec)
    after = os.times()
    cpu_s = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    result["client_cpu_s"] = cpu_s
    result["client_cpu_cores"] = cpu_s / max(result["wall_s"], 1e-9)
    return result


def ok_fraction(result: dict[str, Any], ok_body_bytes: float) -> float | None:
    """Estimated share of gRPC-OK answers: DATA bytes per request ÷ an OK answer's DATA bytes."""
    data = result.get("bytes_data")
    if data is None or ok_body_bytes <= 0 or not result.get("done"):
        return None
    return float(min(1.0, data / (result["done"] * ok_body_bytes)))
