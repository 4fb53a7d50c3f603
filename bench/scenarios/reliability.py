"""Reliability scenarios: ``soak`` (steady load for minutes: failures, memory and fds over time)
and ``chaos`` (a worker SIGKILLed every few seconds under load: goodput and failures).

Both drive the MLP open loop with the Python generator while the main thread samples the server's
process tree from /proc (RSS of the gateway and of each worker, the gateway's open fds). A soak is
*flat* when the end of the run (the median of its last tenth) is within 5 % of its start after
warm-up (the median of its second tenth) for the gateway and every worker, and the gateway holds
no more fds than it did then (a couple of connections of slack).
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.measure.points import Load, run_point
from bench.measure.usage import by_role, rss_bytes
from bench.scenarios.runner import Bench
from bench.systems.catalog import CATALOG
from bench.systems.targets import Running

FLAT_FRACTION = 0.05
FD_SLACK = 4
MIB = 1024 * 1024


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return 0


def sample(running: Running) -> dict[str, Any]:
    """RSS (MiB) of the gateway (the one process, or the supervisor), its front ends and its
    workers, and the open fds of the gateway and its front ends together, now."""
    gateway = running.server.pid
    roles = by_role(gateway)
    return {
        "t": time.monotonic(),
        "gateway_mb": rss_bytes(gateway) / MIB,
        "front_ends_mb": [rss_bytes(p) / MIB for p in roles["front end"]],
        "workers_mb": [rss_bytes(p) / MIB for p in roles["worker"]],
        "fds": _fds(gateway) + sum(_fds(p) for p in roles["front end"]),
    }


def _window(values: list[float], start: float, stop: float) -> float:
    n = len(values)
    part = values[int(n * start) : max(int(n * stop), int(n * start) + 1)]
    return float(statistics.median(part)) if part else 0.0


def flatness(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Start-after-warm-up vs end of the run for each series, and whether all are flat."""
    if len(samples) < 10:
        return {"flat": None, "reason": f"only {len(samples)} samples"}
    series: dict[str, list[float]] = {"gateway_mb": [s["gateway_mb"] for s in samples]}
    for key, label in (("front_ends_mb", "front_end"), ("workers_mb", "worker")):
        count = min(len(s.get(key, [])) for s in samples)
        for i in range(count):
            series[f"{label}{i}_mb"] = [sorted(s[key])[i] for s in samples]
    out: dict[str, Any] = {}
    flat = True
    for name, values in series.items():
        begin, end = _window(values, 0.1, 0.2), _window(values, 0.9, 1.0)
        growth = (end - begin) / begin if begin else 0.0
        out[name] = {"start": begin, "end": end, "growth": growth}
        flat &= growth <= FLAT_FRACTION
    fds = [float(s["fds"]) for s in samples]
    out["fds"] = {"start": _window(fds, 0.1, 0.2), "end": _window(fds, 0.9, 1.0)}
    flat &= out["fds"]["end"] <= out["fds"]["start"] + FD_SLACK
    out["flat"] = flat
    return out


def _run_while_sampling(
    running: Running, load: Load, every_s: float, during: Callable[[], None] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run ``load`` in a thread; sample every ``every_s`` (and call ``during``) until it ends."""
    samples: list[dict[str, Any]] = []
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run_point, running, load, ())
        while not future.done():
            samples.append(sample(running))
            if during is not None:
                during()
            time.sleep(every_s)  # a sampling period, not a wait for a condition
        return future.result(), samples


def soak(bench: Bench) -> None:
    """Steady open-loop load on tensorgate (MLP, one worker) for ``plan.soak_s`` seconds."""
    plan = bench.plan
    section: dict[str, Any] = {"rps": plan.soak_rps, "duration_s": plan.soak_s}
    bench.results["scenarios"]["soak"] = section
    with bench.systems(["tensorgate"], "mlp", ()) as running:
        if "tensorgate" not in running:
            return
        r = running["tensorgate"]
        load = Load(16, plan.soak_s, 0.0, rps=plan.soak_rps, timeout_s=10, per_second_latency=True)
        result, samples = _run_while_sampling(r, load, plan.soak_sample_s)
        section.update(
            result={k: v for k, v in result.items() if k != "timeline"},
            samples=[{**s, "t": s["t"] - samples[0]["t"]} for s in samples],
            flatness=flatness(samples),
            failed=result.get("errors", 0),
        )


def chaos(bench: Bench) -> None:
    """Open-loop load on tensorgate with two workers while one of them is SIGKILLed every
    ``plan.chaos_kill_every_s`` seconds; goodput, failures by status and the kills."""
    plan = bench.plan
    section: dict[str, Any] = {
        "rps": plan.chaos_rps,
        "duration_s": plan.chaos_s,
        "kill_every_s": plan.chaos_kill_every_s,
    }
    bench.results["scenarios"]["chaos"] = section
    name = "tensorgate-2w"
    assert name in CATALOG
    with bench.systems([name], "mlp", ()) as running:
        if name not in running:
            return
        r = running[name]
        kills: list[dict[str, Any]] = []
        rng = random.Random(5)
        next_kill = [time.monotonic() + plan.chaos_kill_every_s]
        lock = threading.Lock()

        def kill_one() -> None:
            now = time.monotonic()
            if now < next_kill[0]:
                return
            next_kill[0] = now + plan.chaos_kill_every_s
            workers = by_role(r.server.pid)["worker"]  # workers only, never a front end
            if workers:
                victim = rng.choice(workers)
                os.kill(victim, signal.SIGKILL)
                with lock:
                    kills.append({"t": now, "pid": victim})

        load = Load(
            32, plan.chaos_s, 0.0, rps=plan.chaos_rps, timeout_s=10, per_second_latency=True
        )
        result, samples = _run_while_sampling(r, load, 0.25, during=kill_one)
        start = samples[0]["t"] if samples else 0.0
        section.update(
            result={k: v for k, v in result.items() if k != "timeline"},
            timeline=result.get("timeline"),
            kills=[{**k, "t": k["t"] - start} for k in kills],
            failed=result.get("errors", 0),
            goodput_ratio=result.get("goodput", 0.0) / plan.chaos_rps if plan.chaos_rps else 0.0,
        )
