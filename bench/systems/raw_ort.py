"""The physical limit: ONNX Runtime run directly, in-process, with no server in the way.

:func:`throughput` runs ``processes`` helper processes (:mod:`bench.load.child`), each with one
session of ``threads`` intra-op threads, looping on batches of ``batch`` rows for ``duration_s``
after a shared start time, pinned to ``cpus`` when given; it returns rows per second over the
window.
:func:`latency_us` is the median single-run time of one batch on one thread (the "model time" of
the light-load goal).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench.load.child import Child
from bench.systems.models import INPUT_NAMES, sample_input

READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class OrtConfig:
    processes: int
    threads: int
    batch: int

    @property
    def label(self) -> str:
        return f"{self.processes}p×{self.threads}t b{self.batch}"


def ort_session(path: Path, threads: int) -> Any:
    """An ONNX Runtime CPU session of ``path``: ``threads`` intra-op threads, one inter-op."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _loop(
    conn: Connection,
    path: Path,
    model: str,
    config: OrtConfig,
    cpus: tuple[int, ...],
    duration_s: float,
) -> None:
    if cpus:
        os.sched_setaffinity(0, cpus)
    session = ort_session(path, config.threads)
    feed = {INPUT_NAMES[model]: sample_input(model, config.batch)}
    session.run(None, feed)  # warm up
    conn.send("ready")
    start = float(conn.recv())
    end = start + duration_s
    while time.monotonic() < start:
        time.sleep(0.001)  # waiting for the shared start time (not a synchronisation in tests)
    rows, cpu0 = 0, time.process_time()
    while True:
        session.run(None, feed)
        now = time.monotonic()
        if now >= end:
            break
        rows += config.batch
    conn.send((rows, time.process_time() - cpu0))
    conn.close()


def throughput(
    path: Path, model: str, config: OrtConfig, cpus: tuple[int, ...], duration_s: float
) -> dict[str, float]:
    """Rows per second of ``config`` over ``duration_s`` (batches completed inside the window)."""
    children = [
        Child("bench.systems.raw_ort:_loop", path, model, config, cpus, duration_s)
        for _ in range(config.processes)
    ]
    try:
        for child in children:
            if not child.conn.poll(READY_TIMEOUT_S):
                raise RuntimeError("raw ONNX Runtime process did not load the model in time")
            child.conn.recv()
        start = time.monotonic() + 0.1
        for child in children:
            child.conn.send(start)
        results = [child.conn.recv() for child in children]
    finally:
        for child in children:
            child.close()
    rows = sum(r[0] for r in results)
    return {"rps": rows / duration_s, "cpu_s": sum(r[1] for r in results)}


def latency_us(
    path: Path, model: str, batch: int = 1, runs: int = 2000, max_s: float = 3.0
) -> float:
    """Median µs of one ``session.run`` of ``batch`` rows on one thread.

    Runs at most ``runs`` times or for ``max_s`` seconds, whichever ends first.
    """
    session = ort_session(path, 1)
    feed = {INPUT_NAMES[model]: sample_input(model, batch)}
    session.run(None, feed)
    times: list[float] = []
    stop = time.monotonic() + max_s
    while len(times) < runs and time.monotonic() < stop:
        t0 = time.perf_counter_ns()
        session.run(None, feed)
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times)
