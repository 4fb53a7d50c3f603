"""tensorgate against the transport ceiling and its peers: every row, in order, computed from a
run's own numbers."""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import PEERS
from bench.report.peer_goals import peer_rows
from tests.bench.report.summaries import point, stat

PEER_GOALS = (
    "tiny gRPC, c=64: ≥ 1.0× Triton",
    "tiny gRPC, 1 server core, c=64: ≥ 0.7× echo",
    "server CPU ≤ 1.5× echo's per request",
    "tiny, c=1: p50 ≤ echo p50 + model time + 0.15 ms",
    "tiny vs MLServer best: ≥ 2× on 1 core, ≥ 3× on 2 cores",
    "tiny vs KServe 0.21's Python ModelServer (gRPC v2 and REST v1): ≥ 2×",
    "REST tiny vs FastAPI inline (REST against REST): ≥ 0.6×",
    "ResNet50 vs raw ORT best split: ≥ 0.95×, and ≥ Triton",
    "batching on with timeout 0 never below batching off",
)


def rows_for(results: dict[str, Any], goal: str) -> list[dict[str, Any]]:
    """The table's rows naming ``goal``."""
    return [g for g in peer_rows(results["scenarios"]) if goal in g["goal"]]


def test_every_row_is_listed_in_order_even_when_nothing_was_measured() -> None:
    rows = peer_rows({})
    assert all(g["group"] == PEERS for g in rows)
    order = [next(i for i, t in enumerate(PEER_GOALS) if t in g["goal"]) for g in rows]
    assert order == sorted(order) and set(order) == set(range(len(PEER_GOALS)))
    assert all(g["met"] is None and g["value"] == "not measured" for g in rows)


def test_triton_row_compares_tensorgates_better_grpc_configuration() -> None:
    sat = {
        "tensorgate": point(1000),
        "tensorgate-batch": point(1500, 1400, 1600),
        "tensorgate-rest": point(9000),  # REST never stands in for the gRPC rows
        "triton": point(1400, 1300, 1500),
    }
    [one_core, two_cores] = rows_for(
        {"scenarios": {"tiny": {"saturation": sat}}}, "c=64: ≥ 1.0× Triton"
    )
    assert "tensorgate-batch vs triton" in one_core["case"]
    assert one_core["value"] == "1.07× (0.93–1.23)" and one_core["met"] is True
    assert two_cores["met"] is None


def test_cpu_row_is_met_only_at_or_under_one_and_a_half_times_echo() -> None:
    sat = {
        "tensorgate": point(1000, server_cpu_us_per_request=594),
        "echo": point(4000, server_cpu_us_per_request=244),
    }
    [row] = rows_for({"scenarios": {"tiny": {"saturation": sat}}}, "server CPU")
    assert row["value"].startswith("2.43×") and row["met"] is False
    sat["tensorgate"] = point(1000, server_cpu_us_per_request=366)
    [row] = rows_for({"scenarios": {"tiny": {"saturation": sat}}}, "server CPU")
    assert row["met"] is True


def test_light_load_row_is_the_overhead_over_echo_and_the_model() -> None:
    light = {"tensorgate": {"p50_ms": stat(0.39, 0.38, 0.41)}, "echo": {"p50_ms": stat(0.24)}}
    results = {"scenarios": {"tiny": {"light": light}, "limits": {"mlp_model_us": 10.0}}}
    [row] = rows_for(results, "c=1")
    assert row["value"] == "overhead 0.140 ms (0.130–0.160)" and row["met"] is True


def test_light_load_row_takes_the_gateways_configuration_that_was_measured() -> None:
    """The full plan sweeps only tensorgate-batch at c=1; the row must still be computed."""
    light = {"tensorgate-batch": {"p50_ms": stat(1.35)}, "echo": {"p50_ms": stat(0.46)}}
    results = {"scenarios": {"tiny": {"light": light}, "limits": {"mlp_model_us": 27.9}}}
    [row] = rows_for(results, "c=1")
    assert row["case"] == "1 server core: tensorgate-batch vs echo"
    assert row["value"].startswith("overhead 0.862 ms") and row["met"] is False


def test_mlserver_and_kserve_rows_compare_like_transports() -> None:
    sat = {
        "tensorgate": point(2000),
        "tensorgate-rest": point(2400),
        "mlserver": point(1500),
        "mlserver-batch": point(1700),
        "kserve-grpc": point(1000),
        "kserve-rest": point(800),
    }
    results = {"scenarios": {"tiny": {"saturation": sat}}}
    mlserver_1core = rows_for(results, "MLServer")[0]
    assert "vs mlserver-batch" in mlserver_1core["case"] and mlserver_1core["met"] is False
    grpc_row, rest_row = rows_for(results, "KServe")
    assert "tensorgate vs kserve-grpc" in grpc_row["case"] and grpc_row["value"].startswith("2.00")
    assert "tensorgate-rest vs kserve-rest" in rest_row["case"]
    assert rest_row["value"].startswith("3.00×") and rest_row["met"] is True


def test_resnet_rows_compare_with_the_best_raw_split_and_with_triton() -> None:
    runs = {
        "1-core: tensorgate": point(12.9),
        "1-core: triton": point(13.5),
        "1-core: raw 1p×1t b1": point(13.2),
        "tensorgate-2w": point(25.1),
        "raw 2p×1t b1": point(26.2),
        "raw 1p×2t b1": point(20.0),
    }
    rows = rows_for({"scenarios": {"resnet50": {"runs": runs}}}, "ResNet50")
    raw1, triton1, raw2, triton2 = rows
    assert raw1["met"] is True and raw1["target"] == "≥ 0.95×"
    assert triton1["met"] is False and "tensorgate vs triton" in triton1["case"]
    assert "raw 2p×1t b1" in raw2["case"] and raw2["value"].startswith("0.96×")
    assert triton2["met"] is None


def test_batching_row_fails_only_where_on_is_below_off_beyond_the_repeats_range() -> None:
    section: dict[str, Any] = {"points": []}
    for key, on, off in (
        ("mlp@16", point(1614, 1605, 1622), point(1674, 1550, 1699)),  # ranges overlap
        ("mlp@64", point(1510, 1510, 1538), point(1594, 1548, 1642)),  # clearly below
    ):
        section["points"].append({"key": key})
        section[key] = {"on (timeout 0)": on, "off": off}
    [row] = rows_for({"scenarios": {"batching": section}}, "never below")
    assert row["met"] is False and "below at mlp@64" in row["note"]
    section["mlp@64"]["on (timeout 0)"] = point(1600, 1580, 1650)
    [row] = rows_for({"scenarios": {"batching": section}}, "never below")
    assert row["met"] is True
