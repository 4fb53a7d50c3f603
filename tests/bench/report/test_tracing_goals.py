"""What tracing costs: the goal's figure (side by side, paired rounds, the medians) and its
verdict at each sample ratio, computed from a run's own numbers."""

from __future__ import annotations

from typing import Any

from bench.report.tracing_goals import tracing_rows
from bench.systems.tracing import TRACING_CONTROL
from tests.bench.report.summaries import point, stat


def rows_for(section: dict[str, Any], goal: str) -> list[dict[str, Any]]:
    return [g for g in tracing_rows(section) if goal in g["goal"]]


def test_tracing_rows_judge_the_median_of_the_paired_rounds() -> None:
    from bench.scenarios.tracing import paired_cost

    rounds: dict[str, Any] = {
        "off": [{"rps": 1000.0}, {"rps": 600.0}, {"rps": 900.0}],
        "ratio 0": [{"rps": 995.0}, {"rps": 597.0}, {"rps": 890.0}],
        "ratio 0.01": [{"rps": 984.0}, {"rps": 591.6}, {"error": "x"}],
    }
    paired = paired_cost(rounds)
    assert paired["ratio 0.01"]["n"] == 2
    assert abs(paired["ratio 0.01"]["median"] - 0.015) < 1e-9
    section: dict[str, Any] = {
        "available": True,
        # The medians alone (off from a fast round, ratio 0 from a slow one) would say 40 %.
        "mlp": {"off": point(900), "ratio 0": point(540), "ratio 0.01": point(720)},
        "paired_cost": paired,
    }
    zero, hundredth = rows_for(section, "tracing cost")
    assert zero["met"] is True and zero["value"].startswith("0.5% (0.5%–1.1%)")
    assert hundredth["met"] is True and hundredth["value"].startswith("1.5% (1.4%–1.6%)")
    assert "median of 2 paired rounds" in hundredth["note"]
    del section["paired_cost"]
    zero, _ = rows_for(section, "tracing cost")
    assert zero["met"] is False and zero["value"].startswith("40.0%")


def test_the_side_by_side_cost_is_the_goal_s_figure_when_measured() -> None:
    section: dict[str, Any] = {
        "available": True,
        "mlp": {"off": point(900), "ratio 0": point(540), "ratio 0.01": point(720)},
        "paired_cost": {"ratio 0": stat(0.09, 0.0, 0.2), "ratio 0.01": stat(0.2, 0.1, 0.3)},
        "side_by_side": {
            "cpu_us_per_request": {
                "off": stat(2000),
                "ratio 0": stat(2010),
                "ratio 0.01": stat(2060),
                "ratio 1.0": stat(2300),
            },
            "cost": {"ratio 0": stat(0.005, -0.002, 0.01), "ratio 0.01": stat(0.03, 0.02, 0.04)},
        },
    }
    zero, hundredth = rows_for(section, "tracing cost")
    assert zero["met"] is True and zero["value"].startswith("0.5% (-0.2%–1.0%)")
    assert hundredth["met"] is False and hundredth["value"].startswith("3.0% (2.0%–4.0%)")
    assert (
        "side by side" in hundredth["note"] and "in turn: 20.0% (10.0%–30.0%)" in hundredth["note"]
    )
    assert "against off" not in hundredth["note"]
    section["side_by_side"]["cost"][TRACING_CONTROL] = stat(0.004, -0.01, 0.02)
    zero, _ = rows_for(section, "tracing cost")
    assert "(a second off against off: 0.4% (-1.0%–2.0%))" in zero["note"]
    (traced,) = rows_for(section, "µs each traced call adds")
    assert traced["met"] is None and traced["value"] == "+300 µs"


def test_with_an_interval_the_goal_is_met_only_when_all_of_it_is_within() -> None:
    costs = {
        "ratio 0": {**stat(0.005, -0.03, 0.04), "ci": [-0.004, 0.012]},
        "ratio 0.01": {**stat(0.008, 0.002, 0.014), "ci": [0.007, 0.0095]},
    }
    section: dict[str, Any] = {
        "available": True,
        "mlp": {"off": point(900), "ratio 0": point(900), "ratio 0.01": point(850)},
        "side_by_side": {"cpu_us_per_request": {}, "cost": costs},
    }
    zero, hundredth = rows_for(section, "tracing cost")
    assert zero["met"] is False and zero["value"] == "0.5% (95% CI -0.4%–1.2%; -3.0%–4.0%)"
    assert hundredth["met"] is True and hundredth["value"] == "0.8% (95% CI 0.7%–0.9%; 0.2%–1.4%)"
