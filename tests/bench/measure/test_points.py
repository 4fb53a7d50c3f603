"""bench.measure.points: the statistics of repeats (median, range, the median's interval) and
the h2load connection layout."""

from __future__ import annotations

from typing import Any

import pytest

from bench.measure.points import grpc_layout, median_ci, stats, summarize


def test_stats_are_median_min_max_and_count() -> None:
    assert stats([3.0, 1.0, 2.0, 10.0]) == {"median": 2.5, "min": 1.0, "max": 10.0, "n": 4}
    assert stats([]) == {"median": 0.0, "min": 0.0, "max": 0.0, "n": 0}


def test_the_median_s_interval_is_bounded_by_order_statistics() -> None:
    assert median_ci([1.0] * 5) is None  # too few to bound the median
    assert median_ci([float(v) for v in range(10)]) == (1.0, 8.0)
    thirty = [float(v) for v in reversed(range(30))]
    assert median_ci(thirty) == (9.0, 20.0)


def test_summarize_reduces_the_successful_repeats_and_keeps_the_first_error() -> None:
    runs: list[dict[str, Any]] = [
        {"rps": 100.0, "p99_ms": 2.0, "statuses": {"OK": 90, "Unavailable": 1}, "errors": 1,
         "error_messages": {"busy": 1}, "timeline": [1]},
        {"rps": 300, "p99_ms": 4.0, "statuses": {"OK": 80}, "client_saturated": True},
        {"error": "RuntimeError: gone"},
    ]  # fmt: skip
    out = summarize(runs)
    assert (out["repeats"], out["failed"]) == (3, 1)
    assert out["rps"] == {"median": 200.0, "min": 100.0, "max": 300.0, "n": 2}
    assert out["statuses"] == {"OK": 170, "Unavailable": 1}
    assert out["errors"] == 1 and out["error_messages"] == {"busy": 1}
    assert out["client_saturated"] is True
    assert out["error"] == "RuntimeError: gone"
    assert out["timeline"] == [1]
    assert "timeline" not in out["runs"][0] and "error_messages" not in out["runs"][0]
    assert "goodput" not in out  # not measured: left out, not zero


@pytest.mark.parametrize(
    ("concurrency", "layout"), [(1, (1, 1)), (4, (4, 1)), (16, (4, 4)), (64, (4, 16))]
)
def test_grpc_concurrency_spreads_over_at_most_four_connections(
    concurrency: int, layout: tuple[int, int]
) -> None:
    assert grpc_layout(concurrency) == layout
