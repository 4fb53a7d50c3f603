"""One benchmark run: the shared state of the scenarios and the systems they start.

:class:`Bench` holds the plan, the model files, the log directory and the results being built;
:meth:`Bench.systems` starts a set of systems (all at once, so rounds can interleave them) and
stops every one of them on exit, recording any that cannot start as "not available" with the
reason instead of failing the run.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import platform
import subprocess
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bench.load import h2load
from bench.measure import progress
from bench.scenarios.plan import Plan
from bench.systems import venvs
from bench.systems.catalog import CATALOG
from bench.systems.models import ensure_models
from bench.systems.procs import StartFailed
from bench.systems.start import start
from bench.systems.targets import Context, Running

log = logging.getLogger(__name__)

BENCH_DIR = Path(__file__).resolve().parents[1]
CACHE = BENCH_DIR / ".cache"


class Bench:
    """State of one run (see the module docstring)."""

    def __init__(self, plan: Plan, run_id: str, out_dir: Path) -> None:
        self.plan = plan
        self.out_dir = out_dir
        self.started = time.monotonic()
        models_root = CACHE / "models"
        ensure_models(models_root)
        self.ctx = Context(models_root, CACHE / "logs" / run_id)
        self.unavailable: dict[str, str] = {}
        self.results: dict[str, Any] = {
            "run": {
                **run_header(run_id, plan),
                "peer_venvs": {
                    name: list(recipe.requirements)
                    for name, recipe in venvs.RECIPES.items()
                    if name != "tools"
                },
            },
            "unavailable": self.unavailable,
            "scenarios": {},
        }

    @contextlib.contextmanager
    def systems(
        self, names: Sequence[str], model: str, cpus: tuple[int, ...], *, metrics: bool = False
    ) -> Iterator[dict[str, Running]]:
        """Start ``names`` serving ``model`` pinned to ``cpus``; stop them all on exit. With
        ``metrics``, tensorgate systems serve their Prometheus page (``Running.metrics_url``)."""
        running: dict[str, Running] = {}
        failed: dict[str, str] = {}

        def start_one(name: str) -> None:
            began = time.monotonic()
            try:
                spec = CATALOG[name]
                if metrics and spec.kind == "tensorgate":
                    spec = replace(spec, params={**spec.params, "metrics": True})
                running[name] = start(self.ctx, spec, model, cpus)
                log.info("%s (%s) up in %.1f s", name, model, time.monotonic() - began)
            except StartFailed as exc:
                failed[name] = f"{exc}: {_last_line(exc.log)}" if exc.log else str(exc)

        if names:
            progress.step(f"starting {', '.join(names)}")
        try:
            # Started side by side (start-up is mostly waiting); measured one at a time. A system
            # that fails to start beside the others (e.g. PyTriton's handshake while several
            # ResNet50 sessions load on two cores) gets one more try on its own.
            with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
                list(pool.map(start_one, names))
            for name in list(failed):
                log.warning("%s failed to start beside the others, retrying alone", name)
                del failed[name]
                start_one(name)
            for name, reason in failed.items():
                self.unavailable[f"{name}/{model}"] = reason
                log.warning("%s not available: %s", name, reason)
            yield {name: running[name] for name in names if name in running}
        finally:
            for r in running.values():
                r.stop()

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started


def _last_line(text: str) -> str:
    """The log's last line naming an error (a traceback's last words), else its last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "Exception" in line]
    return (errors or lines or [""])[-1][:300]


def run_header(run_id: str, plan: Any) -> dict[str, Any]:
    """What every result records first about its run: id, date (UTC), ``plan`` (a dataclass) and
    :func:`machine_info`."""
    return {
        "id": run_id,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "plan": asdict(plan),
        "machine": machine_info(),
    }


CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
"""The /proc/cpuinfo flags a run records (``cpu_flags``): the instruction sets the runtimes'
kernels choose by (bf16 inference needs AVX512_BF16 or AMX)."""


def machine_info() -> dict[str, Any]:
    """CPU (model and :data:`CPU_FLAGS` it has), versions and tools of this machine, recorded
    with every result."""
    model, flags = "", set[str]()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    versions: dict[str, str] = {}
    for package in ("grpcio", "protobuf", "onnxruntime", "numpy", "uvloop"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            versions[package] = version(package)
    h2 = h2load.available()
    h2_version = ""
    if h2:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            h2_version = subprocess.run(
                [h2, "--version"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "cpu_flags": [f for f in CPU_FLAGS if f in flags],
        "python": platform.python_version(),
        "kernel": platform.release(),
        "versions": versions,
        "h2load": h2_version or None,
    }
