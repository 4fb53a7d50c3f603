"""bench.measure.counters: tensorgate's counters summed over labels, their deltas per request."""

from __future__ import annotations

import pytest

from bench.measure.counters import counted, parse, per_request

PAGE = """# HELP tensorgate_worker_runs_total Batches run.
# TYPE tensorgate_worker_runs_total counter
tensorgate_worker_runs_total{worker="0"} 10.0
tensorgate_worker_runs_total{worker="1"} 30.0
tensorgate_worker_wakeups_total{worker="0"} 4.0
tensorgate_worker_cpu_seconds_total{worker="0"} 1.5
tensorgate_worker_run_errors_total{worker="0"} 7.0
tensorgate_request_duration_seconds_count{api="Predict",protocol="tfserving"} 100.0
tensorgate_request_duration_seconds_count{api="ModelInfer",protocol="v2"} 60.0
tensorgate_request_duration_seconds_sum{api="Predict",protocol="tfserving"} 9.0
"""


def test_parse_sums_each_counter_over_its_labels_and_ignores_the_rest() -> None:
    assert parse(PAGE) == {"requests": 160.0, "runs": 40.0, "wakeups": 4.0, "worker_cpu_s": 1.5}
    assert parse("") == {"requests": 0.0, "runs": 0.0, "wakeups": 0.0, "worker_cpu_s": 0.0}


def test_per_request_divides_the_deltas_by_the_requests_answered() -> None:
    before = {"requests": 100.0, "runs": 50.0, "wakeups": 20.0, "worker_cpu_s": 1.0}
    after = {"requests": 1100.0, "runs": 150.0, "wakeups": 70.0, "worker_cpu_s": 1.03}
    figures = per_request(before, after)
    assert figures["runs_per_request"] == pytest.approx(0.1)
    assert figures["wakeups_per_request"] == pytest.approx(0.05)
    assert figures["rows_per_run"] == pytest.approx(10.0)
    assert figures["worker_cpu_us_per_request"] == pytest.approx(30.0)


def test_per_request_is_empty_without_requests_and_has_no_batch_size_without_runs() -> None:
    zero = {"requests": 5.0, "runs": 5.0, "wakeups": 5.0, "worker_cpu_s": 1.0}
    assert per_request(zero, zero) == {}
    assert "rows_per_run" not in per_request(zero, {**zero, "requests": 6.0})


def test_counted_runs_the_point_alone_without_a_metrics_page() -> None:
    assert counted(None, lambda: {"rps": 1.0}) == {"rps": 1.0}
