"""Hung-run decisions, as pure functions of recorded compute times."""

from __future__ import annotations

import pytest

from gateway.worker_channel.watchdog import WEIGHT, HangPolicy, RunTimes, hung_run

POLICY = HangPolicy(min_s=2.0, factor=10.0)


def test_an_untimed_servable_is_left_to_the_ping() -> None:
    assert hung_run(POLICY, RunTimes(), "m:1", 8, computing_s=1e6) is None


def test_a_run_is_hung_past_ten_times_its_expected_time_and_never_before_the_minimum() -> None:
    times = RunTimes()
    times.record("fast:1", rows=1, seconds=0.001)
    assert hung_run(POLICY, times, "fast:1", 1, computing_s=1.9) is None  # the 2 s minimum
    assert hung_run(POLICY, times, "fast:1", 1, computing_s=2.1) == 2.0
    times.record("slow:1", rows=1, seconds=0.5)
    assert hung_run(POLICY, times, "slow:1", 1, computing_s=4.9) is None
    assert hung_run(POLICY, times, "slow:1", 1, computing_s=5.1) == pytest.approx(5.0)


def test_expected_time_grows_with_the_rows_of_the_run() -> None:
    times = RunTimes()
    times.record("m:1", rows=2, seconds=0.2)  # 0.1 s a row
    assert times.expected_s("m:1", 1) == pytest.approx(0.2)  # never less than a whole run
    assert times.expected_s("m:1", 30) == pytest.approx(3.0)
    times.record("m:1", rows=2, seconds=0.4)
    assert times.expected_s("m:1", 1) == pytest.approx(0.2 + WEIGHT * 0.2)
