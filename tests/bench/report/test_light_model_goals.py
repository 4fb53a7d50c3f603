"""Light models at the transport floor, from synthetic results: each bar on the one configuration
it names, the c=1 p50 over its reference, worker runs per request in every round, ResNet50 on
the workers, Python calls reported, and every row listed when nothing was measured."""

from __future__ import annotations

from typing import Any

import pytest

from bench.report.goal_rows import LIGHT_MODELS
from bench.report.light_model_goals import light_model_rows
from bench.systems.catalog import CALL_SYSTEMS
from tests.bench.report.summaries import point, rounds, stat

ROWS = (
    ("default flags: server CPU per call ≤ 1.5× echo's", "1 core: tensorgate vs echo"),
    ("default flags: ≥ 1.3× Triton", "tensorgate vs triton"),
    ("batching on: server CPU per call ≤ 1.4× echo's", "1 core: tensorgate-batch vs echo"),
    ("batching on: ≥ 1.5× Triton", "tensorgate-batch vs triton"),
    ("V2 ModelInfer, default flags: ≥ 1.2× Triton", "tensorgate-v2 vs triton"),
    ("REST, default flags: ≥ 1.0× FastAPI inline", "tensorgate-rest vs fastapi-inline"),
    ("REST, batching on: ≥ 1.0× FastAPI inline", "tensorgate-rest-batch vs fastapi-inline"),
    ("c=1, gRPC, default flags: p50 ≤ echo's + 0.10 ms", "tensorgate vs echo"),
    ("c=1, gRPC, batching on: p50 ≤ echo's + 0.10 ms", "tensorgate-batch vs echo"),
    ("c=1, REST, default flags", "tensorgate-rest vs fastapi-inline"),
    ("c=1, REST, batching on", "tensorgate-rest-batch vs fastapi-inline"),
    ("2 cores, c=64, default flags: ≥ 1.5× triton-2w", "tensorgate-2w vs triton-2w"),
    ("default flags: ≥ 1.5× fastapi-process-2w", "tensorgate-2w vs fastapi-process-2w"),
    ("REST with batching: ≥ 1.0× fastapi-inline-2w", "rest-2w-batch vs fastapi-inline-2w"),
    ("forced to the workers, batching on: CPU", "tensorgate-workers-batch vs echo"),
)
"""The table's rows before the per-system ones, in order: (goal, case) fragments."""
PLACED = (
    "1 server core: tensorgate",
    "1 server core: tensorgate-batch",
    "1 server core: tensorgate-batch-log",
    "1 server core: tensorgate-batch-timing",
    "1 server core: tensorgate-rest",
    "1 server core: tensorgate-rest-batch",
    "1 server core: tensorgate-v2",
    "1 server core: tensorgate-v2-batch",
    "2 cores: tensorgate-2w",
    "2 cores: tensorgate-2w-batch",
    "2 cores: tensorgate-rest-2w-batch",
    "2 cores: tensorgate-2w-1f",
    "2 cores: tensorgate-2w-1f-batch",
    "2 cores, 1 connection: tensorgate-2w",
    "2 cores, 1 connection: tensorgate-2w-1f",
)
"""The worker-runs rows: every tensorgate tiny system not forced to the workers."""


def rows(sc: dict[str, Any], goal: str) -> list[dict[str, Any]]:
    return [r for r in light_model_rows(sc) if goal in r["goal"]]


def test_every_row_is_listed_in_order_when_nothing_was_measured() -> None:
    listed = light_model_rows({})
    assert all(r["group"] == LIGHT_MODELS and r["met"] is None for r in listed)
    assert all(r["value"] == "not measured" for r in listed)
    first = listed[: len(ROWS)]
    assert [(g in r["goal"], c in r["case"]) for r, (g, c) in zip(first, ROWS, strict=True)] == [
        (True, True)
    ] * len(ROWS)
    placed = listed[len(ROWS) : len(ROWS) + len(PLACED)]
    assert [r["case"] for r in placed] == list(PLACED)
    resnet = listed[len(ROWS) + len(PLACED) : -len(CALL_SYSTEMS)]
    assert [r["case"].split(":")[0] for r in resnet] == ["1 pinned core", "2 cores"] * 2
    assert resnet[0]["case"] == "1 pinned core: tensorgate, tensorgate-ov, tensorgate-ov-bf16"
    assert [r["case"] for r in listed[-len(CALL_SYSTEMS) :]] == [
        f"MLP, c=16: {name}" for name in CALL_SYSTEMS
    ]


def test_each_bar_judges_the_configuration_it_names_not_the_better_of_two() -> None:
    sat = {
        "echo": point(9000, server_cpu_us_per_request=100),
        "tensorgate": point(2000, server_cpu_us_per_request=500),
        "tensorgate-batch": point(5100, server_cpu_us_per_request=140),
        "triton": point(3400),
    }
    sc = {"tiny": {"saturation": sat}}
    cpu_default, cpu_batch = rows(sc, "server CPU per call")
    assert cpu_default["met"] is False and cpu_default["value"].startswith("5.00×")
    assert cpu_batch["met"] is True and cpu_batch["value"].startswith("1.40×")
    default, batch = rows(sc, "× Triton")[:2]
    assert "tensorgate vs triton" in default["case"] and default["met"] is False
    assert "tensorgate-batch vs triton" in batch["case"] and batch["met"] is True  # 1.50×


@pytest.mark.parametrize(
    ("ours", "reference", "met"),
    [(0.20, 0.11, True), (0.22, 0.11, False)],
)
def test_c1_rows_take_the_p50_over_the_references(ours: float, reference: float, met: bool) -> None:
    light = {
        "tensorgate": {"p50_ms": stat(ours, ours - 0.01, ours + 0.02)},
        "echo": {"p50_ms": stat(reference, reference - 0.01, reference + 0.01)},
    }
    (row,) = rows({"tiny": {"light": light}}, "c=1, gRPC, default flags")
    assert row["met"] is met and row["target"] == "p50 ≤ echo's + 0.10 ms"
    over = ours - reference
    assert row["value"] == f"{over:+.3f} ms ({over - 0.02:+.3f}–{over + 0.03:+.3f})"


def test_rest_c1_rows_compare_with_fastapi_inline() -> None:
    light = {
        "tensorgate-rest": {"p50_ms": stat(0.30)},
        "tensorgate-rest-batch": {"p50_ms": stat(0.24)},
        "fastapi-inline": {"p50_ms": stat(0.15)},
    }
    default, batch = rows({"tiny": {"light": light}}, "c=1, REST")
    assert default["met"] is False and default["value"].startswith("+0.150 ms")
    assert batch["met"] is True and batch["value"].startswith("+0.090 ms")


def test_worker_runs_must_stay_under_the_bar_in_every_round_not_only_the_median() -> None:
    sat = {
        "tensorgate": rounds(3000, runs_per_request=[0.0, 0.002, 0.0]),
        "tensorgate-batch": rounds(3000, runs_per_request=[0.0, 0.994, 0.0]),
        "tensorgate-rest": rounds(3000, runs_per_request=[0.0, None, 0.0]),
    }
    by_case = {r["case"]: r for r in rows({"tiny": {"saturation": sat}}, "worker runs")}
    steady = by_case["1 server core: tensorgate"]
    assert steady["met"] is True and steady["value"] == "max 0.002 (3 rounds)"
    assert steady["note"] == "by round: 0.000, 0.002, 0.000"
    moved = by_case["1 server core: tensorgate-batch"]
    assert sat["tensorgate-batch"]["runs_per_request"]["median"] == 0.0
    assert moved["met"] is False and moved["value"] == "max 0.994 (3 rounds)"
    failed = by_case["1 server core: tensorgate-rest"]
    assert failed["met"] is False and "1 round(s) not counted" in failed["note"]
    assert by_case["1 server core: tensorgate-v2"]["value"] == "not measured"
    assert not any("workers" in case for case in by_case)  # forced there: no such row


def test_worker_runs_rows_cover_two_cores_and_the_one_connection_point() -> None:
    two = {
        "saturation": {"tensorgate-2w": rounds(8000, runs_per_request=[0.0, 0.0, 0.0])},
        "one_connection": {"tensorgate-2w-1f": rounds(4000, runs_per_request=[0.0, 0.02, 0.0])},
    }
    by_case = {r["case"]: r for r in rows({"tiny-2core": two}, "worker runs")}
    assert by_case["2 cores: tensorgate-2w"]["met"] is True
    assert by_case["2 cores, 1 connection: tensorgate-2w-1f"]["met"] is False


def test_resnet_stays_on_the_workers_and_reaches_the_raw_runtime() -> None:
    runs = {
        "1-core: tensorgate": rounds(12.0, runs_per_request=[1.0, 1.0, 1.0]),
        "1-core: tensorgate-ov": rounds(12.0, runs_per_request=[1.0, 0.5, 1.0]),
        "1-core: raw 1p×1t b1": point(12.3),
        "tensorgate-2w": rounds(24.0, runs_per_request=[1.0, 1.0, 1.0]),
        "raw 2p×1t b1": point(25.0),
        "raw 2p×1t b8": point(26.0),
    }
    one, two = rows({"resnet50": {"runs": runs}}, "stays on the workers")
    assert one["case"] == "1 pinned core: tensorgate, tensorgate-ov"
    assert one["met"] is False and one["value"] == "min 0.500 (6 rounds)"
    assert two["met"] is True and two["case"] == "2 cores: tensorgate-2w"
    raw1, raw2 = rows({"resnet50": {"runs": runs}}, "≥ 0.97× raw ONNX Runtime")
    assert raw1["met"] is True and raw1["value"].startswith("0.98×")  # 12.0 / 12.3
    assert "raw 2p×1t b8" in raw2["case"] and raw2["met"] is False  # 24 / 26: 0.92×


def test_python_calls_are_reported_per_process_for_each_configuration() -> None:
    counts = {
        "front end": {"ours": 85.04, "other": 40.0, "top": []},
        "worker": {"ours": 0.1, "other": 0.2, "top": []},  # under half a call: left out
    }
    calls = {"tensorgate": counts, "tensorgate-rest": {"error": "StartFailed: no port"}}
    by_case = {r["case"]: r for r in rows({"calls": calls}, "Python calls")}
    assert by_case["MLP, c=16: tensorgate"]["value"] == "front end 85.0 (+40.0)"
    assert by_case["MLP, c=16: tensorgate-rest"]["value"] == "failed"
    assert by_case["MLP, c=16: tensorgate-v2"]["value"] == "not measured"
    assert all(r["met"] is None and r["target"] == "reported" for r in by_case.values())
