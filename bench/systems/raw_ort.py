"""The physical limit: ONNX Runtime run directly, in-process, with no server in the way.

:func:`throughput` runs ``processes`` helper processes (:mod:`bench.load.child`), each with one
session of ``threads`` intra-op threads, looping on batches of ``batch`` rows for ``duration_s``
after a shared start time, pinned to ``cpus`` when given; it returns rows per second over the
window. A configuration's ``runtime`` may be OpenVINO instead (``openvino_fp32``,
``openvino_bf16``): the model compiled for the CPU at that precision on ``threads`` threads,
OpenVINO's defaults otherwise (the limit tensorgate's OpenVINO worker is held to).
:func:`latency_us` is the median single-run time of one batch on one thread (the "model time" of
the light-load goal).
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench.load.child import Child
from bench.systems.models import INPUT_NAMES, sample_input

READY_TIMEOUT_S = 120.0


OPENVINO_PRECISIONS = {"openvino_fp32": "f32", "openvino_bf16": "bf16"}
"""A raw configuration's OpenVINO runtimes → OpenVINO's ``INFERENCE_PRECISION_HINT``."""


@dataclass(frozen=True)
class OrtConfig:
    processes: int
    threads: int
    batch: int
    runtime: str = "onnxruntime"
    """``onnxruntime``, or a key of :data:`OPENVINO_PRECISIONS`."""

    @property
    def label(self) -> str:
        """``2p×1t b1`` (ONNX Runtime; the scenario's key is ``raw 2p×1t b1``), or with the
        OpenVINO runtime before it (``openvino_bf16 2p×1t b1``, the key as it is): the reports
        compare tensorgate with the best ``raw`` row, its OpenVINO rows with these."""
        shape = f"{self.processes}p×{self.threads}t b{self.batch}"
        return shape if self.runtime == "onnxruntime" else f"{self.runtime} {shape}"


def ort_session(path: Path, threads: int) -> Any:
    """An ONNX Runtime CPU session of ``path``: ``threads`` intra-op threads, one inter-op."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _runner(path: Path, runtime: str, threads: int) -> Callable[[dict[str, Any]], Any]:
    """One run of the model on a feed, in ``runtime`` on ``threads`` threads."""
    if runtime == "onnxruntime":
        session = ort_session(path, threads)
        return functools.partial(session.run, None)
    import openvino

    core = openvino.Core()
    config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": OPENVINO_PRECISIONS[runtime]}
    config["INFERENCE_NUM_THREADS"] = threads
    request = core.compile_model(core.read_model(str(path)), "CPU", config).create_infer_request()
    return functools.partial(request.infer, share_inputs=True, share_outputs=False)


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
    run = _runner(path, config.runtime, config.threads)
    feed = {INPUT_NAMES[model]: sample_input(model, config.batch)}
    run(feed)  # warm up
    conn.send("ready")
    start = float(conn.recv())
    end = start + duration_s
    while time.monotonic() < start:
        time.sleep(0.001)  # waiting for the shared start time (not a synchronisation in tests)
    rows, cpu0 = 0, time.process_time()
    while True:
        run(feed)
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
