"""How long each scenario should take under a plan, in seconds (for the progress line's ETA).

Counted from the plan and the systems each scenario measures: every measured point costs its load
time, warm-up and :data:`POINT_OVERHEAD_S` (spawning h2load, reading /proc), once per repeat;
each group of servers started together costs :data:`START_S`. Peer virtualenvs built on first use
are not counted (the progress line rescales itself as scenarios finish).
"""

from __future__ import annotations

from bench.scenarios.features import BATCHING_CONFIGS, BATCHING_POINTS, PROFILED
from bench.scenarios.plan import Plan
from bench.scenarios.seeds import JPEG_WAYS, ROW_WAYS
from bench.systems.catalog import (
    CALL_SYSTEMS,
    LIGHT_LOAD,
    ONE_CONNECTION,
    RESNET_PINNED,
    RESNET_TWO_CORE,
    TINY,
    TWO_CORE,
)
from bench.systems.raw_ort import OPENVINO_PRECISIONS

START_S = 12.0
"""Starting a group of servers side by side (models loaded, ready)."""
POINT_OVERHEAD_S = 0.6
CALLS_S = 7.0
"""Counting one system's Python calls: start it, 500 calls of warm-up, 2000 counted."""
VERIFY_S = 1.0
"""Checking one system's gRPC status and OK answer size before its h2load runs."""
SWEEP_SYSTEMS = len(LIGHT_LOAD) + 3
"""Systems in the full plan's sweep: :data:`~bench.systems.catalog.LIGHT_LOAD` and the best of
Triton, KServe and MLServer (FastAPI's is usually FastAPI inline, already there)."""


def _points(count: int, repeats: int, seconds: float, warmup_s: float) -> float:
    return count * repeats * (seconds + warmup_s + POINT_OVERHEAD_S)


def estimates_s(plan: Plan, names: list[str]) -> dict[str, float]:
    """Scenario name → estimated seconds, for ``names`` in order."""
    return {name: _estimate(plan, name) for name in names}


def _estimate(plan: Plan, name: str) -> float:
    r, warm = plan.repeats, plan.warmup_s
    if name == "limits":
        return 8.0
    if name == "tiny":
        systems = len(TINY) + len(plan.peers)
        swept = systems if plan.sweep_all else SWEEP_SYSTEMS
        levels = len([c for c in plan.sweep_concurrency if c != plan.saturation_concurrency])
        return (
            START_S
            + systems * VERIFY_S
            + _points(systems, r, plan.point_s, warm)
            + _points(swept * levels, r, plan.sweep_s, warm)
        )
    if name == "tiny-2core":
        points = len(TWO_CORE) + len(ONE_CONNECTION)
        return START_S + len(TWO_CORE) * VERIFY_S + _points(points, r, plan.point_s, warm)
    if name == "resnet50":
        raw = 1 + len(OPENVINO_PRECISIONS)  # ONNX Runtime and OpenVINO at each precision
        jobs = len(RESNET_PINNED) + raw
        if plan.name == "full":
            jobs += len(RESNET_TWO_CORE) + len(plan.ort_configs) + len(OPENVINO_PRECISIONS)
        return 2 * START_S + _points(jobs, r, plan.resnet_s, 1.5)
    if name == "overload":
        total = 0.0
        for _model in plan.overload_models:
            total += START_S + _points(1, r, plan.point_s, warm)
            total += _points(len(plan.overload_factors), plan.overload_repeats, plan.overload_s, 1)
        return total
    if name == "seeds":
        jpeg = [u for u in plan.seeds_users for _ in JPEG_WAYS]
        runs = jpeg + [plan.seeds_users[0]] * len(ROW_WAYS)
        return 2 * START_S + sum(u + plan.seeds_plateau_s + 15 for u in runs)
    if name == "ramp":
        systems = 3 if plan.name == "full" else 1
        return START_S + systems * (plan.ramp_users * plan.ramp_step_s + plan.ramp_plateau_s + 1)
    if name == "batching":
        total = 0.0
        for model, concurrencies in BATCHING_POINTS.items():
            seconds = plan.resnet_s if model == "resnet50" else plan.point_s
            points = (len(BATCHING_CONFIGS) + 1) * len(concurrencies)  # each config, and off
            total += START_S + _points(points, r, seconds, warm)
        return total
    if name == "tracing":
        return START_S + _points(2, r, plan.point_s, warm)
    if name == "idle-rss":
        return 40.0
    if name == "drain":
        return 2 * plan.drain_runs * (START_S + 6.0)
    if name == "calls":
        return len(CALL_SYSTEMS) * CALLS_S
    if name == "profile":
        return len(PROFILED) * (START_S + plan.profile_s + 6.0)
    return 30.0
