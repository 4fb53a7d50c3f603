"""The performance goals as ratios from one run's results: met, missed, or n/a (not measured).

:func:`compute` returns every row of issue 12's goal table (group ``issue 12``), in its order,
whether or not this run measured it, then issue 10's tracing goals
(:mod:`bench.report.tracing_goals`), the still-open goals of earlier issues (overload, memory,
reliability: :mod:`bench.report.earlier_goals`), issue 27's front-end goals
(:mod:`bench.report.frontend_goals`), issue 26's cost goals (:mod:`bench.report.cost_goals`) and
issue 28's v2 comparison (:mod:`bench.report.v2_goals`) and issue 36's OpenVINO rows
(:mod:`bench.report.openvino_goals`). A ratio is the ratio of medians with
the range the repeats allow (:mod:`bench.report.goal_rows`). tensorgate's gRPC rows compare its
better configuration (batching off, or on with timeout 0:
:data:`bench.systems.catalog.GRPC_TENSORGATE`) and name it.
"""

from __future__ import annotations

from typing import Any

from bench.report.cost_goals import cost_rows
from bench.report.earlier_goals import earlier_rows
from bench.report.floor_goals import floor_rows
from bench.report.frontend_goals import frontend_rows
from bench.report.goal_rows import TRACING, fmt_ratio, median, ratio, row
from bench.report.openvino_goals import openvino_rows
from bench.report.tiny_rows import cpu_row, light_row, resnet_rows, versus
from bench.report.tracing_goals import tracing_rows
from bench.report.v2_goals import v2_rows
from bench.systems.catalog import GRPC_TENSORGATE


def compute(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every goal row: issue 12's table in its order, then the earlier issues' open goals."""
    sc = results.get("scenarios", {})
    sat1 = sc.get("tiny", {}).get("saturation", {})
    sat2 = sc.get("tiny-2core", {}).get("saturation", {})
    tg1, tg2 = GRPC_TENSORGATE["1-core"], GRPC_TENSORGATE["2-core"]
    g1 = "tiny gRPC, c=64: ≥ 1.0× Triton (same model and cores, dynamic batching on)"
    g4 = "tiny vs MLServer best: ≥ 2× on 1 core, ≥ 3× on 2 cores"
    g5 = "tiny vs KServe 0.21's Python ModelServer (gRPC v2 and REST v1): ≥ 2×"
    mlservers1 = ("mlserver", "mlserver-batch")
    mlservers2 = ("mlserver-pw2", "mlserver-pw2-batch")
    rows = [
        versus(g1, sat1, tg1, ("triton",), 1.0, "1 server core"),
        versus(g1, sat2, tg2, ("triton-2w",), 1.0, "2 cores"),
        versus("tiny gRPC, 1 server core, c=64: ≥ 0.7× echo", sat1, tg1, ("echo",), 0.7, "1 core"),
        cpu_row(
            "tiny gRPC, 1 server core, c=64: server CPU ≤ 1.5× echo's per request", sat1, tg1, 1.5
        ),
        light_row("tiny, c=1: p50 ≤ echo p50 + model time + 0.15 ms", sc, 0.15),
        versus(g4, sat1, tg1, mlservers1, 2.0, "1 server core"),
        versus(g4, sat2, tg2, mlservers2, 3.0, "2 cores"),
        versus(g5, sat1, tg1, ("kserve-grpc",), 2.0, "gRPC, 1 server core"),
        versus(g5, sat1, ("tensorgate-rest",), ("kserve-rest",), 2.0, "REST, 1 server core"),
        versus(
            "REST tiny vs FastAPI inline (REST against REST): ≥ 0.6×",
            sat1,
            ("tensorgate-rest",),
            ("fastapi-inline",),
            0.6,
            "1 server core",
        ),
        *_resnet_rows(sc.get("resnet50", {}).get("runs", {})),
        _batching_row(sc.get("batching", {})),
    ]
    resnet_met = [r["met"] for r in rows if r["goal"].startswith("ResNet50")]
    extra = tracing_rows(sc.get("tracing", {})) + earlier_rows(sc)
    tracing_met = [r["met"] for r in extra if r["group"] == TRACING]
    return [
        *rows,
        *extra,
        *frontend_rows(sc, resnet_met),
        *cost_rows(sc, resnet_met + tracing_met),
        *v2_rows(sc),
        *floor_rows(sc),
        *openvino_rows(sc),
    ]


def _resnet_rows(runs: dict[str, Any]) -> list[dict[str, Any]]:
    return resnet_rows("ResNet50 vs raw ORT best split: ≥ 0.95×, and ≥ Triton", runs, 0.95)


def _batching_row(section: dict[str, Any]) -> dict[str, Any]:
    goal = "batching on with timeout 0 never below batching off"
    target = "≥ 1.0× at every point (within the repeats' range)"
    case = "1 server core: on (timeout 0) vs off, each model and concurrency"
    ratios = []
    for point in section.get("points", []):
        summaries = section.get(point["key"], {})
        on, off = summaries.get("on (timeout 0)"), summaries.get("off")
        if on is not None and off is not None and median(on) and median(off):
            ratios.append((ratio(on, off), point["key"]))
    if not ratios:
        return row(goal, case, target)
    (worst, key) = min(ratios)
    met = all(r[2] >= 1.0 for r, _ in ratios)
    below = [k for r, k in ratios if r[2] < 1.0]
    note = f"worst point {key}" + (f"; below at {', '.join(below)}" if below else "")
    return row(goal, case, target, fmt_ratio(worst), met, note)
