"""The goal tables together: every table's rows from one run's numbers, in the report's order,
each table printed under a title that says what it measures."""

from __future__ import annotations

import re
from typing import Any

from bench.report import goals
from bench.report.goal_rows import GROUPS
from bench.report.write import markdown
from tests.bench.report.summaries import point


def results(scenarios: dict[str, Any]) -> dict[str, Any]:
    return {
        "run": {
            "id": "t",
            "date": "d",
            "plan": {"name": "quick", "repeats": 3, "saturation_concurrency": 64},
            "machine": {"cpus": 2, "cpu_model": "x", "python": "3", "versions": {}, "h2load": ""},
        },
        "scenarios": scenarios,
    }


def test_the_tables_come_in_the_reports_order_each_row_in_one_of_them() -> None:
    rows = goals.compute({"scenarios": {}})
    order = [list(GROUPS).index(r["group"]) for r in rows]
    assert order == sorted(order)
    # Without soak, chaos, overload and idle-rss their tables have no row; every other is listed.
    assert set(order) == set(range(len(GROUPS) - 2))


def test_report_shows_each_table_with_target_ratio_range_and_verdict() -> None:
    sat = {"tensorgate": point(1000, 990, 1010), "triton": point(1400, 1300, 1500)}
    found = results({"tiny": {"saturation": sat, "driver": "h2load"}})
    found["goals"] = goals.compute(found)
    text = markdown(found, [])
    titles = [line[3:] for line in text.splitlines() if line.startswith("## Goals: ")]
    assert titles == [f"Goals: {t}" for t in GROUPS.values()][: len(titles)]
    assert len(titles) == len(GROUPS) - 2
    line = next(x for x in text.splitlines() if "1 server core: tensorgate vs triton" in x)
    assert "| ≥ 1.0× | 0.71× (0.66–0.78) | **no** |" in line
    light = next(x for x in text.splitlines() if "default flags: ≥ 1.3× Triton" in x)
    assert "| ≥ 1.3× | 0.71× (0.66–0.78) | **no** |" in light


def test_no_title_or_row_names_an_issue_number() -> None:
    found = results({})
    found["goals"] = goals.compute(found)
    assert not re.search(r"[Ii]ssue \d", markdown(found, []))
