"""Issue 33's goal rows from synthetic results: the CPU bars against echo, the sweep's batching
on against off at every concurrency, and rows left unmeasured."""

from __future__ import annotations

from typing import Any

from bench.report.floor_goals import floor_rows
from tests.bench.report.test_goals import point


def rows(sc: dict[str, Any], goal: str) -> list[dict[str, Any]]:
    return [r for r in floor_rows(sc) if goal in r["goal"]]


def test_cpu_per_call_against_echo_for_the_placed_and_the_worker_path() -> None:
    sat = {
        "echo": point(5000, server_cpu_us_per_request=200),
        "tensorgate": point(3000, server_cpu_us_per_request=300),
        "tensorgate-batch": point(3500, server_cpu_us_per_request=270),
        "tensorgate-workers-batch": point(2500, server_cpu_us_per_request=380),
    }
    sc = {"tiny": {"saturation": sat}}
    (placed,) = rows(sc, "server CPU per call ≤ 1.4×")
    assert placed["met"] is True and "tensorgate-batch" in placed["case"]
    (forced,) = rows(sc, "the worker path forced")
    assert forced["met"] is False and "tensorgate-workers-batch" in forced["case"]


def test_the_sweep_is_met_only_when_batching_on_reaches_off_at_every_concurrency() -> None:
    off = {c: point(1000) for c in ("1", "4", "64")}
    on = {"1": point(1000, 900, 1100), "4": point(1200), "64": point(2000)}
    sc = {"tiny": {"sweep": {"tensorgate": off, "tensorgate-batch": on}}}
    (row,) = rows(sc, "sweep")
    assert row["met"] is True and "c=1: 1.00×" in row["note"]
    on["4"] = point(800, 700, 900)
    (row,) = rows(sc, "sweep")
    assert row["met"] is False and row["value"].startswith("worst c=4")


def test_every_row_is_listed_when_nothing_was_measured() -> None:
    listed = floor_rows({})
    assert len(listed) == 19
    assert all(r["met"] is None and r["group"] == "issue 33" for r in listed)
