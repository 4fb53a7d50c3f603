"""bench.scenarios.grpcio's pure parts: the plan, the order of points, the specs, the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.scenarios.grpcio import (
    QUIET_CORES,
    SYSTEMS,
    GrpcPlan,
    is_quiet,
    job_key,
    job_order,
    spec_for,
    split_key,
    summarize_point,
)
from bench.systems.catalog import BATCHING_TIMEOUT_0, CATALOG


def test_the_plan_checks_versions_systems_and_durations() -> None:
    plan = GrpcPlan(versions=("1.75.1", "1.85.1"), rounds=6, seconds=8.0)
    assert plan.systems == SYSTEMS == ("echo", "tensorgate", "tensorgate-batch")
    assert plan.estimate_s() == 2 * 3 * 6 * (8.0 + 1.0 + 6.0)
    with pytest.raises(ValueError, match="release number"):
        GrpcPlan(versions=("1.85",))
    with pytest.raises(ValueError, match="unknown system"):
        GrpcPlan(systems=("triton",))
    with pytest.raises(ValueError, match="rounds"):
        GrpcPlan(rounds=0)


def test_a_round_measures_each_system_s_versions_back_to_back() -> None:
    assert job_order(("1.75.1", "1.85.1"), ("echo", "tensorgate")) == [
        ("1.75.1", "echo"),
        ("1.85.1", "echo"),
        ("1.75.1", "tensorgate"),
        ("1.85.1", "tensorgate"),
    ]
    assert job_key("1.78.2", "tensorgate-batch") == "tensorgate-batch@1.78.2"
    assert split_key(job_key("1.78.2", "tensorgate-batch")) == ("1.78.2", "tensorgate-batch")


def test_specs_run_the_catalog_s_configuration_on_the_version_s_python() -> None:
    spec = spec_for("tensorgate-batch", "1.78.2", Path("/v/bin/python"), Path("/v/src"))
    assert spec.name == "tensorgate-batch@1.78.2" and spec.kind == "tensorgate"
    assert spec.params["python"] == "/v/bin/python"
    assert spec.params["batching"] == BATCHING_TIMEOUT_0
    assert spec.params["workers"] == 1 and spec.params["intra_op"] == 1
    assert spec.params["env"]["PYTHONPATH"].startswith("/v/src:")
    assert "python" not in CATALOG["tensorgate-batch"].params  # the catalog is left alone
    assert spec_for("echo", "1.75.1", Path("/p"), Path("/s")).kind == "echo"


def _run(rps: float, cpu_us: float, foreign: float = 0.0, **extra: Any) -> dict[str, Any]:
    return {
        "driver": "h2load",
        "rps": rps,
        "server_cpu_us_per_request": cpu_us,
        "foreign_server_cores": foreign,
        "foreign_client_cores": 0.0,
        "loadavg_1m": 2.0,
        "steal_cores": 0.0,
        **extra,
    }


def test_the_summary_adds_noise_quiet_medians_and_the_smallest_ok_share() -> None:
    runs = [
        _run(1000, 500, ok_fraction=1.0),
        _run(600, 800, foreign=0.5, ok_fraction=0.98),  # another process shared the server CPU
        _run(1100, 450, foreign=QUIET_CORES),
        {"error": "RuntimeError: did not start"},
    ]
    s = summarize_point(runs)
    assert s["repeats"] == 4 and s["failed"] == 1
    assert s["rps"]["median"] == 1000 and s["rps"]["min"] == 600
    assert s["foreign_server_cores"]["max"] == 0.5
    assert s["loadavg_1m"]["median"] == 2.0
    assert s["quiet"]["n"] == 2
    assert s["quiet"]["rps"] == {"median": 1050.0, "min": 1000.0, "max": 1100.0, "n": 2}
    assert s["quiet"]["server_cpu_us_per_request"]["median"] == 475.0
    assert s["ok_fraction_min"] == 0.98
    assert not is_quiet({"error": "x"}) and not is_quiet(_run(1, 1, foreign=0.2))
