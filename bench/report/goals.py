"""The performance goals as ratios from one run's results: met, missed, or n/a (not measured).

:func:`compute` returns every goal table's rows, each table in its own order and every row listed
whether or not this run measured it, the tables in the report's order
(:data:`~bench.report.goal_rows.GROUPS`):

- light models at the transport floor, with the default flags and with batching
  (:mod:`bench.report.light_model_goals`);
- ResNet50 at the runtimes' own speed, ONNX Runtime and OpenVINO
  (:mod:`bench.report.heavy_model_goals`);
- tensorgate against the transport ceiling and its peers (:mod:`bench.report.peer_goals`);
- what serving the tiny MLP costs (:mod:`bench.report.serving_cost_goals`);
- KServe v2 against the v2 peers (:mod:`bench.report.v2_goals`);
- several front ends and the drain (:mod:`bench.report.front_end_goals`);
- what tracing costs (:mod:`bench.report.tracing_goals`);
- overload and idle memory (:mod:`bench.report.overload_goals`), soak and chaos
  (:mod:`bench.report.reliability_goals`).

A ratio is the ratio of medians with the range the repeats allow (:mod:`bench.report.goal_rows`).
"""

from __future__ import annotations

from typing import Any

from bench.report.front_end_goals import front_end_rows
from bench.report.heavy_model_goals import heavy_model_rows
from bench.report.light_model_goals import light_model_rows
from bench.report.overload_goals import overload_rows
from bench.report.peer_goals import RESNET_GOAL, peer_rows
from bench.report.reliability_goals import reliability_rows
from bench.report.serving_cost_goals import cost_rows
from bench.report.tracing_goals import tracing_rows
from bench.report.v2_goals import v2_rows


def compute(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every goal row of every table, in the report's order."""
    sc = results.get("scenarios", {})
    machine = results.get("run", {}).get("machine", {})
    peers = peer_rows(sc)
    tracing = tracing_rows(sc.get("tracing", {}))
    resnet_met = [r["met"] for r in peers if r["goal"] == RESNET_GOAL]
    tracing_met = [r["met"] for r in tracing]
    return [
        *light_model_rows(sc),
        *heavy_model_rows(sc, machine),
        *peers,
        *cost_rows(sc, resnet_met + tracing_met),
        *v2_rows(sc),
        *front_end_rows(sc, resnet_met),
        *tracing,
        *overload_rows(sc),
        *reliability_rows(sc.get("soak", {}), sc.get("chaos", {})),
    ]
