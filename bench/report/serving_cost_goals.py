"""What serving the tiny MLP costs tensorgate, from one run.

- tiny gRPC, 1 server core, c=64: tensorgate's better gRPC configuration
  (:data:`~bench.systems.catalog.GRPC_TENSORGATE` ``1-core``) ≥ 0.8× Triton, ≥ 1.5× MLServer's
  best, ≥ 1.5× KServe gRPC;
- tiny REST, 1 server core, c=64: tensorgate's better REST configuration
  (:data:`~bench.systems.catalog.REST_TENSORGATE`) ≥ 1.0× FastAPI + ProcessPool, ≥ 1.0× KServe
  REST;
- server CPU per request ≤ 2.0× echo's; c=1 p50 overhead over echo ≤ 0.15 ms
  (:mod:`bench.report.tiny_rows`);
- the worker's CPU per request at c=64 ≤ 2× ONNX Runtime's own time per row at the batch size it
  ran (:func:`ort_us_per_row`: ``limits``' one-thread times per batch size, interpolated);
- reported: runs, wake-ups (submit doorbells) and rows per run per request for tensorgate and
  tensorgate-batch, and the cost ρ of one refusal on the tiny model under 2× overload
  (:func:`refusal_cost`);
- ResNet50's rows against raw ONNX Runtime and Triton and both tracing rows stay met.
"""

from __future__ import annotations

import itertools
from typing import Any

from bench.report.goal_rows import COST, best, median, row
from bench.report.tiny_rows import cpu_row, light_row, versus
from bench.systems.catalog import GRPC_TENSORGATE, REST_TENSORGATE

WORKER_CPU_TIMES_ORT = 2.0
"""The bar on the worker's CPU per request, in ONNX Runtime's own per-row times."""
COUNTED_SYSTEMS = ("tensorgate", "tensorgate-batch")
REFUSED = ("Unavailable", "ResourceExhausted")
"""Statuses of a fast refusal (as :mod:`bench.report.overload_goals` counts them)."""


def cost_rows(sc: dict[str, Any], stay_met: list[bool | None]) -> list[dict[str, Any]]:
    """The table's rows; ``stay_met``: whether each ResNet50 row against raw ONNX Runtime and
    Triton and each tracing row was met."""
    sat = sc.get("tiny", {}).get("saturation", {})
    grpc, where = GRPC_TENSORGATE["1-core"], "1 server core, c=64"
    g_grpc = "tiny gRPC, 1 server core, c=64: ≥ 0.8× Triton, ≥ 1.5× MLServer, ≥ 1.5× KServe"
    g_rest = "tiny REST, 1 server core, c=64: ≥ 1.0× FastAPI + ProcessPool, ≥ 1.0× KServe REST"
    mlservers = ("mlserver", "mlserver-batch")
    return [
        versus(g_grpc, sat, grpc, ("triton",), 0.8, where, group=COST),
        versus(g_grpc, sat, grpc, mlservers, 1.5, where, group=COST),
        versus(g_grpc, sat, grpc, ("kserve-grpc",), 1.5, where, group=COST),
        versus(g_rest, sat, REST_TENSORGATE, ("fastapi-process",), 1.0, where, group=COST),
        versus(g_rest, sat, REST_TENSORGATE, ("kserve-rest",), 1.0, where, group=COST),
        cpu_row("tiny gRPC, c=64: server CPU per request ≤ 2.0× echo's", sat, grpc, 2.0, COST),
        light_row("tiny, c=1: p50 overhead over echo ≤ 0.15 ms", sc, 0.15, COST),
        worker_cpu_row(sat, sc.get("limits", {})),
        *(_counted_row(sat, name) for name in COUNTED_SYSTEMS),
        _refusal_row(sc.get("overload", {}).get("mlp")),
        _stay_met(stay_met),
    ]


def ort_us_per_row(by_batch: dict[str, float], rows: float) -> float | None:
    """ONNX Runtime's µs per row for one run of ``rows`` rows (rounded to whole rows, at least 1),
    from ``limits``' ``mlp_model_us_by_batch`` (µs of one run per batch size): linear
    interpolation of the run's time between the measured sizes; beyond the largest, its time per
    row. None without measurements."""
    times = sorted((int(b), float(us)) for b, us in by_batch.items())
    if not times:
        return None
    b = max(1, round(rows))
    if b <= times[0][0]:
        return times[0][1] / times[0][0]
    for (b0, t0), (b1, t1) in itertools.pairwise(times):
        if b <= b1:
            return (t0 + (t1 - t0) * (b - b0) / (b1 - b0)) / b
    return times[-1][1] / times[-1][0]


def worker_cpu_row(sat: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any]:
    """The worker's CPU µs per request against ONNX Runtime's µs per row at the batch size the
    worker ran (the point's ``rows_per_run``): met when ≤ :data:`WORKER_CPU_TIMES_ORT`×."""
    goal = "tiny, c=64: worker CPU per request ≤ 2× ONNX Runtime's own time per row"
    key = "worker_cpu_us_per_request"
    grpc = GRPC_TENSORGATE["1-core"]
    name = best(sat, grpc)
    case = f"1 server core: {name or ' / '.join(grpc)}, at its mean batch size"
    target = f"≤ {WORKER_CPU_TIMES_ORT}×"
    point = sat.get(name or "")
    per_row = None
    if point and median(point, key) and median(point, "rows_per_run"):
        per_row = ort_us_per_row(
            limits.get("mlp_model_us_by_batch", {}), median(point, "rows_per_run") or 1
        )
    if not point or not per_row:
        return row(goal, case, target, group=COST)
    cpu = point[key]
    value = (
        f"{cpu['median'] / per_row:.2f}× ({cpu['min'] / per_row:.2f}–{cpu['max'] / per_row:.2f})"
    )
    rows = point["rows_per_run"]["median"]
    note = (
        f"worker {cpu['median']:.1f} µs/request; ORT {per_row:.1f} µs/row at batch "
        f"{max(1, round(rows))} ({rows:.1f} rows/run)"
    )
    return row(
        goal, case, target, value, cpu["median"] / per_row <= WORKER_CPU_TIMES_ORT, note, COST
    )


def _counted_row(sat: dict[str, Any], name: str) -> dict[str, Any]:
    goal = "tiny, c=64: runs, wake-ups and rows per run"
    case = f"1 server core: {name}"
    point = sat.get(name)
    keys = ("runs_per_request", "wakeups_per_request", "rows_per_run")
    if not point or any(k not in point for k in keys):
        return row(goal, case, "reported", group=COST)
    value = (
        f"{point['runs_per_request']['median']:.3f} runs/request, "
        f"{point['wakeups_per_request']['median']:.3f} wake-ups/request, "
        f"{point['rows_per_run']['median']:.1f} rows/run"
    )
    note = "a wake-up is one submit doorbell (the gateway rings only a sleeping worker)"
    return row(goal, case, "reported", value, None, note, COST)


def refusal_cost(capacity: float, served: float, refused: float) -> float | None:
    """ρ, the cost of one refusal in served requests: offered 2× capacity, the served rate S and
    the refused rate R share the CPU budget, S + ρ·R = capacity, so ρ = (capacity − S) / R (all
    per second). None without refusals."""
    if refused <= 0:
        return None
    return (capacity - served) / refused


def _refusal_row(case: dict[str, Any] | None) -> dict[str, Any]:
    goal = "overload on the tiny model: the cost ρ of a refusal"
    where = "MLP, 1 server core, open loop at 2× capacity"
    at_2x = (case or {}).get("points", {}).get("2")
    capacity = (case or {}).get("capacity_rps", 0.0)
    if not at_2x or not capacity or "goodput" not in at_2x or "rps" not in at_2x:
        return row(goal, where, "reported (ρ = (capacity − S) / R)", group=COST)
    where = f"{case.get('system', 'tensorgate')}: " + where if case else where
    statuses = at_2x.get("statuses", {})
    answered = sum(statuses.values())
    refused_n = sum(statuses.get(k, 0) for k in REFUSED)
    timed_out = statuses.get("DeadlineExceeded", 0) + statuses.get("Canceled", 0)
    served = at_2x["goodput"]["median"]
    sent = at_2x["rps"]["median"]
    refused = sent * refused_n / answered if answered else 0.0
    rho = refusal_cost(capacity, served, refused)
    p99 = at_2x.get("p99_ms", {}).get("median", 0.0)
    value = (
        f"ρ {rho:.2f}" if rho is not None else "ρ n/a (no refusals)"
    ) + f"; S {served:.0f}, R {refused:.0f} req/s, capacity {capacity:.0f} req/s"
    note = (
        f"goodput {served:.0f} req/s, {refused_n} refused, {timed_out} timed out, "
        f"p99 of accepted {p99:.1f} ms"
    )
    return row(goal, where, "reported (ρ = (capacity − S) / R)", value, None, note, COST)


def _stay_met(met: list[bool | None]) -> dict[str, Any]:
    goal = "ResNet50 rows and both tracing rows stay met"
    case = "ResNet50 against raw ONNX Runtime and Triton; tracing's cost at ratios 0 and 0.01"
    measured = [m for m in met if m is not None]
    if not measured:
        return row(goal, case, "all met", group=COST)
    return row(
        goal, case, "all met", f"{sum(measured)} of {len(measured)} met", all(measured), group=COST
    )
