"""Measuring points honestly: interleaved rounds, repeats, medians with min–max, CPU on both sides.

A *point* is one load shape against one running system. :func:`interleaved` runs every point once
per round, rounds repeated (A B C A B C ...), so slow minutes of this machine's unreliable second
core hit every system alike; :func:`stats` reduces the repeats to median, min and max. Each run
records the server's CPU (whole process tree) and the client's own CPU.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.load import h2load
from bench.load.ghz_report import percentile_ms
from bench.load.loadgen import LoadOptions, run_load
from bench.measure import progress
from bench.measure.usage import CpuMeter
from bench.systems.targets import Running, Target

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Load:
    """One closed- or open-loop load shape (seconds; ``rps`` > 0 means open loop)."""

    concurrency: int = 1
    duration_s: float = 3.0
    warmup_s: float = 1.0
    rps: float = 0.0
    driver: str = "python"
    """``h2load`` or ``python`` (open loop and ramps are always ``python``)."""
    timeout_s: float = 20.0
    processes: int = 1
    per_second_latency: bool = False
    schedule: Any = None
    connections: int = 0
    """gRPC connections the concurrency is spread over (0: :func:`grpc_layout`'s default). With
    several front ends each connection lands on one (``SO_REUSEPORT`` spreads connections)."""


def grpc_layout(concurrency: int, connections: int = 0) -> tuple[int, int]:
    """h2load ``(connections, streams per connection)`` for a gRPC concurrency: ``connections``
    when given (at most one per call in flight), else at most 4."""
    connections = min(concurrency, connections or 4)
    return connections, max(1, concurrency // connections)


def run_h2load(target: Target, load: Load, client_cpus: tuple[int, ...]) -> dict[str, Any]:
    """One h2load run against ``target``; normalised like :func:`run_python`."""
    if target.transport == "grpc":
        connections, streams = grpc_layout(load.concurrency, load.connections)
    else:
        connections, streams = load.concurrency, 1
    spec = h2load.H2loadRun(
        url=target.url,
        body=target.h2_body,
        connections=connections,
        streams=streams,
        duration_s=load.duration_s,
        warmup_s=load.warmup_s,
        h1=target.transport == "http",
        headers=target.h2load_headers,
        cpus=client_cpus,
    )
    r = h2load.run_measured(spec)
    return {
        "driver": "h2load",
        "rps": r["rps"],
        "goodput": r["rps"] * (r["succeeded"] / r["done"] if r["done"] else 0.0),
        "p50_ms": r["latency_ms"]["p50"],
        "p90_ms": r["latency_ms"]["p90"],
        "p99_ms": r["latency_ms"]["p99"],
        "errors": r["failed"] + r["errored"] + r["timeout"],
        "client_cpu_cores": r["client_cpu_cores"],
        "client_saturated": r["client_cpu_cores"] >= 0.9,
        "data_bytes_per_request": (r.get("bytes_data", 0) / r["done"]) if r["done"] else 0.0,
    }


def load_options(target: Target, load: Load, client_cpus: tuple[int, ...]) -> LoadOptions:
    return LoadOptions(
        target=target.address,
        method=target.method,
        payload=target.payload,
        transport=target.transport,
        concurrency=load.concurrency,
        duration_s=load.duration_s,
        warmup_s=load.warmup_s,
        rps=load.rps,
        connections=grpc_layout(load.concurrency, load.connections)[0],
        timeout_s=load.timeout_s,
        processes=load.processes,
        cpus=client_cpus,
        per_second_latency=load.per_second_latency,
        schedule=load.schedule,
        content_type=target.content_type,
        metadata=target.headers,
    )


def run_python(target: Target, load: Load, client_cpus: tuple[int, ...]) -> dict[str, Any]:
    """One run of the Python generator; keeps the ghz report under ``report``."""
    report = run_load(load_options(target, load, client_cpus))
    statuses = report["statusCodeDistribution"]
    out: dict[str, Any] = {
        "driver": "python",
        "rps": report["rps"],
        "goodput": report["goodput"],
        "p50_ms": percentile_ms(report, 50),
        "p90_ms": percentile_ms(report, 90),
        "p99_ms": percentile_ms(report, 99),
        "errors": sum(v for k, v in statuses.items() if k != "OK"),
        "statuses": statuses,
        "error_messages": report["errorDistribution"],
        "client_cpu_cores": report["client"]["cpu_cores"],
        "client_saturated": report["client"]["saturated"],
    }
    if "sendLag" in report:
        out["send_lag_p99_ms"] = report["sendLag"]["p99_ms"]
    if load.per_second_latency:
        out["timeline"] = report["timeline"]
    return out


def run_point(running: Running, load: Load, client_cpus: tuple[int, ...]) -> dict[str, Any]:
    """Run ``load`` once against ``running``, with the server tree's CPU use."""
    meter = CpuMeter(running.server.pid)
    meter.start()
    began = time.monotonic()
    if load.driver == "h2load" and load.rps == 0 and load.schedule is None:
        result = run_h2load(running.target, load, client_cpus)
    else:
        result = run_python(running.target, load, client_cpus)
    wall = time.monotonic() - began
    cpu_s = meter.stop()
    result["server_cpu_cores"] = cpu_s / wall
    if result["rps"] > 0 and load.rps == 0:
        # Closed loop: the rate held over warmup and window alike.
        served = result["rps"] * (load.duration_s + load.warmup_s)
        result["server_cpu_us_per_request"] = cpu_s / served * 1e6
    return result


Job = tuple[str, Callable[[], dict[str, Any]]]
MAX_MESSAGES = 5
"""Distinct error messages kept per summarized point (the most frequent)."""


def interleaved(
    jobs: Sequence[Job], repeats: int, label: str = "{key}"
) -> dict[str, list[dict[str, Any]]]:
    """Run each job once per round for ``repeats`` rounds; results per job key, in order.

    A job that raises is recorded as ``{"error": ...}`` for that repeat and the rounds go on.
    ``label`` (formatted with ``key``) names the job on the progress line.
    """
    out: dict[str, list[dict[str, Any]]] = {key: [] for key, _ in jobs}
    for round_no in range(repeats):
        for key, job in jobs:
            progress.step(f"{label.format(key=key)} · round {round_no + 1}/{repeats}")
            try:
                result = job()
            except Exception as exc:
                log.warning("%s (round %d) failed: %s", key, round_no + 1, exc)
                result = {"error": f"{type(exc).__name__}: {exc}"}
            log.info("%s round %d: %s", key, round_no + 1, _brief(result))
            out[key].append(result)
    return out


def _brief(result: dict[str, Any]) -> str:
    if "error" in result:
        return str(result["error"])[:200]
    return ", ".join(
        f"{k}={result[k]:.4g}"
        for k in ("rps", "p50_ms", "p99_ms", "client_cpu_cores")
        if isinstance(result.get(k), float | int)
    )


def stats(values: Sequence[float]) -> dict[str, float]:
    """``{"median", "min", "max", "n"}`` of ``values`` (all 0 when empty)."""
    if not values:
        return {"median": 0.0, "min": 0.0, "max": 0.0, "n": 0}
    return {
        "median": float(statistics.median(values)),
        "min": float(min(values)),
        "max": float(max(values)),
        "n": len(values),
    }


def median_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """A distribution-free 95 % confidence interval of the median of ``values`` (the order
    statistics the binomial rule gives: the ``k``-th from each end, ``k = ⌊(n − 1.96√n) / 2⌋``);
    None for fewer than 6 values, which cannot bound it."""
    n = len(values)
    if n < 6:
        return None
    k = math.floor((n - 1.96 * math.sqrt(n)) / 2)
    ordered = sorted(values)
    return float(ordered[k]), float(ordered[n - 1 - k])


COUNTED = ("runs_per_request", "wakeups_per_request", "rows_per_run", "worker_cpu_us_per_request")
"""tensorgate's own figures per request (:mod:`bench.measure.counters`), where recorded."""


def summarize(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Median/min/max of each numeric metric over the successful repeats (+ the raw runs)."""
    ok = [r for r in runs if "error" not in r]
    out: dict[str, Any] = {"repeats": len(runs), "failed": len(runs) - len(ok)}
    for key in (
        "rps",
        "goodput",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "client_cpu_cores",
        "server_cpu_cores",
        "server_cpu_us_per_request",
        "send_lag_p99_ms",
        *COUNTED,
    ):
        values = [float(r[key]) for r in ok if isinstance(r.get(key), int | float)]
        if values:
            out[key] = stats(values)
    out["client_saturated"] = any(r.get("client_saturated") for r in ok)
    out["errors"] = sum(int(r.get("errors", 0)) for r in ok)
    statuses: dict[str, int] = {}
    for r in ok:
        for k, v in r.get("statuses", {}).items():
            statuses[k] = statuses.get(k, 0) + v
    if statuses:
        out["statuses"] = statuses
    messages: dict[str, int] = {}
    for r in ok:
        for k, v in r.get("error_messages", {}).items():
            messages[k] = messages.get(k, 0) + v
    if messages:
        top = sorted(messages.items(), key=lambda kv: -kv[1])[:MAX_MESSAGES]
        out["error_messages"] = dict(top)
    if runs and any("error" in r for r in runs):
        out["error"] = next(r["error"] for r in runs if "error" in r)
    out["runs"] = [
        {k: v for k, v in r.items() if k not in ("timeline", "error_messages")} for r in runs
    ]
    timelines = [r["timeline"] for r in ok if "timeline" in r]
    if timelines:
        out["timeline"] = timelines[0]
    return out
