"""tensorgate against the transport ceiling and its peers, tiny MLP and ResNet50, from one run.

- tiny gRPC, c=64: ≥ 1.0× Triton (1 server core; 2 cores), ≥ 0.7× the echo server, server CPU
  per request ≤ 1.5× echo's; c=1: p50 ≤ echo's + the model's time + 0.15 ms;
- tiny against MLServer's best (≥ 2× on 1 core, ≥ 3× on 2 cores) and KServe's Python
  ModelServer (gRPC v2 and REST v1, ≥ 2×); REST against FastAPI inline ≥ 0.6×;
- ResNet50 ≥ 0.95× the best raw ONNX Runtime split and ≥ Triton (1 pinned core; 2 cores);
- batching on with timeout 0 never below batching off (``batching`` scenario).

tensorgate's gRPC rows take its better configuration (batching off, or on with timeout 0:
:data:`~bench.systems.catalog.GRPC_TENSORGATE`) and name it.
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import fmt_ratio, median, ratio, row
from bench.report.tiny_rows import cpu_row, light_row, resnet_rows, versus
from bench.systems.catalog import GRPC_TENSORGATE

RESNET_GOAL = "ResNet50 vs raw ORT best split: ≥ 0.95×, and ≥ Triton"
"""The goal text of the ResNet50 rows (other tables check that they stay met)."""


def peer_rows(sc: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's rows, in its order (every row listed, n/a where this run did not measure)."""
    sat1 = sc.get("tiny", {}).get("saturation", {})
    sat2 = sc.get("tiny-2core", {}).get("saturation", {})
    tg1, tg2 = GRPC_TENSORGATE["1-core"], GRPC_TENSORGATE["2-core"]
    g1 = "tiny gRPC, c=64: ≥ 1.0× Triton (same model and cores, dynamic batching on)"
    g4 = "tiny vs MLServer best: ≥ 2× on 1 core, ≥ 3× on 2 cores"
    g5 = "tiny vs KServe 0.21's Python ModelServer (gRPC v2 and REST v1): ≥ 2×"
    mlservers1 = ("mlserver", "mlserver-batch")
    mlservers2 = ("mlserver-pw2", "mlserver-pw2-batch")
    return [
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


def _resnet_rows(runs: dict[str, Any]) -> list[dict[str, Any]]:
    return resnet_rows(RESNET_GOAL, runs, 0.95)


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
