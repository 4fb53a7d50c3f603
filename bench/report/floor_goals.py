"""Issue 33's goals (group ``issue 33``): light models at the transport floor, from one run.

- tiny gRPC Predict, 1 server core, c=64: tensorgate's better gRPC configuration
  (:data:`~bench.systems.catalog.GRPC_TENSORGATE` ``1-core``, runs placed by the rule) at ≤ 1.4×
  echo's server CPU per call, ≥ 1.3× Triton, ≥ 1.8× MLServer's best and KServe gRPC; V2
  ModelInfer (``tensorgate-v2``, ``-v2-batch``) ≥ 1.2× Triton;
- tiny REST: ≥ 0.8× FastAPI inline, ≥ 1.5× FastAPI + ProcessPool and KServe REST;
- c=1: p50 ≤ echo's p50 + 0.10 ms (:func:`bench.report.tiny_rows.light_row` with the model's
  own time left in, as the issue states the bar);
- the sweep: batching on (timeout 0) ≥ batching off at every concurrency, within the rounds'
  range;
- 2 cores, c=64 over 8 connections: default front ends ≥ 1.5× FastAPI + ProcessPool and Triton
  (two each); reported: tensorgate over REST against FastAPI inline on two cores;
- the worker path forced (``tensorgate-workers``, ``-workers-batch``): CPU per call ≤ 1.8× echo's;
- ResNet50 placed on the workers: ≥ 0.97× raw ONNX Runtime on one pinned core and on two, ≥
  Triton, and on two cores ≥ FastAPI inline.
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import FLOOR, fmt_ratio, median, ratio, row
from bench.report.tiny_rows import ONE_CORE, cpu_row, light_row, resnet_rows, versus
from bench.systems.catalog import GRPC_TENSORGATE, REST_TENSORGATE

WORKER_PATH = ("tensorgate-workers", "tensorgate-workers-batch")
V2_TENSORGATE = ("tensorgate-v2", "tensorgate-v2-batch")


def floor_rows(sc: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 33's rows, in the issue's order."""
    sat1 = sc.get("tiny", {}).get("saturation", {})
    sat2 = sc.get("tiny-2core", {}).get("saturation", {})
    grpc, where = GRPC_TENSORGATE["1-core"], "1 server core, c=64"
    two = GRPC_TENSORGATE["2-core"]
    g_grpc = "tiny gRPC Predict, 1 core, c=64: ≥ 1.3× Triton, ≥ 1.8× MLServer and KServe gRPC"
    g_rest = "tiny REST, 1 core: ≥ 0.8× FastAPI inline, ≥ 1.5× FastAPI+ProcessPool, KServe REST"
    g_two = "2 cores, c=64 over 8 connections: ≥ 1.5× fastapi-process-2w and triton-2w"
    return [
        cpu_row(
            "tiny gRPC Predict, c=64: server CPU per call ≤ 1.4× echo's", sat1, grpc, 1.4, FLOOR
        ),
        versus(g_grpc, sat1, grpc, ("triton",), 1.3, where, group=FLOOR),
        versus(g_grpc, sat1, grpc, ("mlserver", "mlserver-batch"), 1.8, where, group=FLOOR),
        versus(g_grpc, sat1, grpc, ("kserve-grpc",), 1.8, where, group=FLOOR),
        versus(
            "tiny V2 ModelInfer, 1 core, c=64: ≥ 1.2× Triton (same protocol)",
            sat1,
            V2_TENSORGATE,
            ("triton",),
            1.2,
            where,
            group=FLOOR,
        ),
        versus(g_rest, sat1, REST_TENSORGATE, ("fastapi-inline",), 0.8, where, group=FLOOR),
        versus(g_rest, sat1, REST_TENSORGATE, ("fastapi-process",), 1.5, where, group=FLOOR),
        versus(g_rest, sat1, REST_TENSORGATE, ("kserve-rest",), 1.5, where, group=FLOOR),
        light_row("tiny, c=1: p50 ≤ echo p50 + 0.10 ms", sc, 0.10, FLOOR, less_model=False),
        _sweep_row(sc.get("tiny", {}).get("sweep", {})),
        versus(g_two, sat2, two, ("fastapi-process-2w",), 1.5, "2 cores", group=FLOOR),
        versus(g_two, sat2, two, ("triton-2w",), 1.5, "2 cores", group=FLOOR),
        _reported(
            versus(
                "2 cores, REST: tensorgate against FastAPI inline (reported)",
                sat2,
                ("tensorgate-rest-2w-batch",),
                ("fastapi-inline-2w",),
                0.0,
                "2 cores",
            )
        ),
        cpu_row(
            "the worker path forced: CPU per call ≤ 1.8× echo's", sat1, WORKER_PATH, 1.8, FLOOR
        ),
        *_resnet_rows(sc.get("resnet50", {}).get("runs", {})),
    ]


def _reported(found: dict[str, Any]) -> dict[str, Any]:
    return {**found, "group": FLOOR, "target": "reported", "met": None}


def _sweep_row(sweep: dict[str, Any]) -> dict[str, Any]:
    """Batching on (timeout 0) against off at each concurrency of the sweep: met when every
    ratio's range reaches 1.0."""
    goal = "sweep: batching on ≥ batching off at every concurrency (c = 1, 4, 16, 64, 256)"
    off, on = (sweep.get(name, {}) for name in GRPC_TENSORGATE["1-core"])
    case = "1 server core: tensorgate-batch vs tensorgate"
    target = "≥ 1.0× within the rounds' range"
    points = [(int(c), ratio(on[c], off[c])) for c in on if median(on[c]) and median(off.get(c))]
    if not points:
        return row(goal, case, target, group=FLOOR)
    points.sort()
    worst_c, worst = min(points, key=lambda p: p[1][0])
    met = all(r[2] >= 1.0 for _, r in points)
    note = "; ".join(f"c={c}: {r[0]:.2f}×" for c, r in points)
    return row(goal, case, target, f"worst c={worst_c}: {fmt_ratio(worst)}", met, note, FLOOR)


def _resnet_rows(runs: dict[str, Any]) -> list[dict[str, Any]]:
    goal = "ResNet50 on the workers: ≥ 0.97× raw ORT, ≥ Triton; 2 cores ≥ FastAPI inline"
    unpinned = {k: v for k, v in runs.items() if not k.startswith(ONE_CORE)}
    two = ("tensorgate-2w", "tensorgate-1w2t")
    inline = versus(goal, unpinned, two, ("fastapi-inline-2w",), 1.0, "2 cores", group=FLOOR)
    return [*resnet_rows(goal, runs, 0.97, FLOOR), inline]
