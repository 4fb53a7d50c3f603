"""What serving the tiny MLP costs: each row met at its bar and missed when its input is worse;
ρ's arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from bench.report import goals
from bench.report.goal_rows import COST
from bench.report.serving_cost_goals import ort_us_per_row, refusal_cost
from tests.bench.report.summaries import point, stat

BY_BATCH = {"1": 20.0, "2": 24.0, "4": 32.0, "8": 48.0, "16": 80.0, "32": 144.0}


def cost(results: dict[str, Any], goal: str) -> list[dict[str, Any]]:
    return [g for g in goals.compute(results) if g["group"] == COST and goal in g["goal"]]


def tiny(sat: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"scenarios": {"tiny": {"saturation": sat}, **more}}


def test_every_row_is_listed_and_none_is_met_when_nothing_was_measured() -> None:
    rows = [g for g in goals.compute({"scenarios": {}}) if g["group"] == COST]
    assert len(rows) == 12
    assert all(g["met"] is None and g["value"] == "not measured" for g in rows)


@pytest.mark.parametrize(
    ("peer", "bar"), [("triton", 0.8), ("mlserver-batch", 1.5), ("kserve-grpc", 1.5)]
)
def test_grpc_rows_take_tensorgates_better_configuration_against_each_bar(
    peer: str, bar: float
) -> None:
    for ours, met in ((bar * 1000, True), (bar * 1000 - 1, False)):
        sat = {"tensorgate": point(ours / 2), "tensorgate-batch": point(ours), peer: point(1000)}
        (row,) = [r for r in cost(tiny(sat), "tiny gRPC") if peer in r["case"]]
        assert "tensorgate-batch vs" in row["case"] and row["target"] == f"≥ {bar}×"
        assert row["met"] is met


@pytest.mark.parametrize("peer", ["fastapi-process", "kserve-rest"])
def test_rest_rows_take_the_better_rest_configuration(peer: str) -> None:
    for ours, met in ((1000.0, True), (999.0, False)):
        sat = {
            "tensorgate-rest": point(10),
            "tensorgate-rest-batch": point(ours),
            peer: point(1000),
        }
        (row,) = [r for r in cost(tiny(sat), "tiny REST") if peer in r["case"]]
        assert "tensorgate-rest-batch vs" in row["case"] and row["met"] is met


def test_server_cpu_row_is_met_up_to_twice_echos() -> None:
    for us, met in ((200.0, True), (201.0, False)):
        sat = {
            "tensorgate": point(1000, server_cpu_us_per_request=us),
            "echo": point(3000, server_cpu_us_per_request=100.0),
        }
        (row,) = cost(tiny(sat), "server CPU per request")
        assert row["target"] == "≤ 2.0×" and row["met"] is met


def test_light_row_is_met_up_to_an_overhead_of_0_15_ms() -> None:
    for p50, met in ((0.64, True), (0.66, False)):
        light = {"tensorgate": {"p50_ms": stat(p50)}, "echo": {"p50_ms": stat(0.4)}}
        results = {"scenarios": {"tiny": {"light": light}, "limits": {"mlp_model_us": 100.0}}}
        (row,) = cost(results, "c=1: p50 overhead")
        assert row["met"] is met


def test_ort_time_per_row_interpolates_between_batch_sizes() -> None:
    assert ort_us_per_row(BY_BATCH, 1) == 20.0
    assert ort_us_per_row(BY_BATCH, 0.4) == 20.0  # never under one row
    assert ort_us_per_row(BY_BATCH, 8.2) == 6.0  # rounded to 8 rows: 48 µs / 8
    assert ort_us_per_row(BY_BATCH, 12) == pytest.approx(64.0 / 12)  # halfway from 8 to 16
    assert ort_us_per_row(BY_BATCH, 64) == 144.0 / 32  # beyond the largest: its time per row
    assert ort_us_per_row({}, 4) is None


def test_worker_cpu_row_compares_with_ort_at_the_batch_size_it_ran() -> None:
    limits = {"mlp_model_us_by_batch": BY_BATCH}
    for us, met in ((12.0, True), (12.1, False)):  # batch 8: ORT 6 µs per row, bar 2×
        sat = {
            "tensorgate": point(100),
            "tensorgate-batch": point(1000, worker_cpu_us_per_request=us, rows_per_run=7.8),
        }
        (row,) = cost(tiny(sat, limits=limits), "worker CPU per request")
        assert "tensorgate-batch" in row["case"] and row["met"] is met
        assert "batch 8" in row["note"]


def test_counters_are_reported_per_system() -> None:
    counted = {"runs_per_request": 0.25, "wakeups_per_request": 0.125, "rows_per_run": 4.0}
    sat = {"tensorgate-batch": point(1000, **counted)}
    rows = cost(tiny(sat), "runs, wake-ups and rows per run")
    assert [r["case"] for r in rows] == [
        "1 server core: tensorgate",
        "1 server core: tensorgate-batch",
    ]
    assert rows[0]["value"] == "not measured"
    assert rows[1]["value"] == "0.250 runs/request, 0.125 wake-ups/request, 4.0 rows/run"
    assert rows[1]["met"] is None and rows[1]["target"] == "reported"


def test_refusal_cost_is_the_capacity_left_unserved_per_refusal() -> None:
    # 2x offered: 1000 req/s capacity, 800 served, 400 refused: each refusal cost half a request.
    assert refusal_cost(1000.0, 800.0, 400.0) == 0.5
    assert refusal_cost(1000.0, 1000.0, 1000.0) == 0.0  # free refusals
    assert refusal_cost(1000.0, 800.0, 0.0) is None


def test_refusal_row_reads_the_overload_scenarios_2x_point() -> None:
    at_2x = {
        "rps": stat(2000.0),
        "goodput": stat(800.0),
        "p99_ms": stat(12.0),
        "statuses": {"OK": 4000, "Unavailable": 3000, "ResourceExhausted": 1000, "Canceled": 2000},
    }
    case = {"system": "tensorgate-guarded", "capacity_rps": 1000.0, "points": {"1": {}, "2": at_2x}}
    (row,) = cost({"scenarios": {"overload": {"mlp": case}}}, "cost ρ")
    # refused 4000 of 10000 answers at 2000 req/s sent: R = 800 req/s; ρ = 200 / 800
    assert row["value"].startswith("ρ 0.25; S 800, R 800 req/s, capacity 1000 req/s")
    assert "4000 refused, 2000 timed out, p99 of accepted 12.0 ms" in row["note"]


def test_resnet_and_tracing_rows_must_all_stay_met() -> None:
    (row,) = cost({"scenarios": {}}, "stay met")
    assert row["met"] is None
    runs = {
        "1-core: tensorgate": point(10),
        "1-core: raw 1p×1t b1": point(10),
        "1-core: triton": point(11),
    }
    (row,) = cost({"scenarios": {"resnet50": {"runs": runs}}}, "stay met")
    assert row["value"] == "1 of 2 met" and row["met"] is False
    runs["1-core: triton"] = point(9)
    (row,) = cost({"scenarios": {"resnet50": {"runs": runs}}}, "stay met")
    assert row["value"] == "2 of 2 met" and row["met"] is True
