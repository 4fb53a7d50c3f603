"""bench.scenarios.otlp: the plan, and a short run's results (the plumbing, not the timing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.scenarios.otlp import OtlpPlan, point_key, run


def test_the_plan_checks_sizes_rounds_and_cpu_time() -> None:
    plan = OtlpPlan()
    assert plan.requests == (1, 11, 85) and plan.export
    assert plan.ways()[-2:] == ("library export", "tensorgate export")
    assert "library export" not in OtlpPlan(export=False).ways()
    assert plan.estimate_s() == 3 * 6 * 7 * 0.3 * 1.5
    for bad in ({"requests": ()}, {"requests": (0,)}, {"rounds": 0}, {"point_cpu_s": 0.0}):
        with pytest.raises(ValueError):
            OtlpPlan(**bad)
    assert point_key(6, "library") == "6 spans · library"


def test_a_short_run_measures_every_way_at_every_size_and_writes_the_report(
    tmp_path: Path,
) -> None:
    out = tmp_path / "2026-11-28-otlp"
    results = run(OtlpPlan(requests=(1, 2), rounds=2, point_cpu_s=0.001), out, tmp_path / "logs")
    assert {p.name for p in out.iterdir()} == {"results.json", "README.md", "otlp.png"}
    assert json.loads((out / "results.json").read_text())["points"] == results["points"]
    assert results["kind"] == "otlp"
    assert results["run"]["same_request"] == {"bytes": True, "message": True, "spans": 12}
    assert results["run"]["sink_spans"] >= 2 * (6 + 12)  # two rounds of two exports each
    assert set(results["points"]) == {"6", "12"}
    for by_way in results["points"].values():
        assert set(by_way) == set(OtlpPlan().ways())
        for point in by_way.values():
            assert point["n"] == 2 and point["median"] > 0 and "errors" not in point
    assert (tmp_path / "logs" / out.name / "otlp-sink.log").exists()
