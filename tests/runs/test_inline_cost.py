"""The cost rule of in-front-end runs, with injected runs and clocks: measured row counts, the
decision, and the demotions that keep a stalling version out."""

from __future__ import annotations

import pytest

from gateway.runs.inline_cost import (
    BACKOFF_S,
    COLD_BOUND_S,
    LOOP_BOUND_S,
    MAX_MEASURED_ROWS,
    MEASURE_BYTES,
    REPEATS,
    RERUNS,
    Measured,
    Placement,
    RowTime,
    decide,
    measure,
)


class Model:
    """Runs that take ``fixed + per_row × rows`` seconds of both clocks (the first of each row
    count ``cold`` more); ``preempted``: wall seconds the machine adds to the runs of these
    indexes (0: the first run); ``rows``: what it was run on."""

    def __init__(
        self,
        fixed: float,
        per_row: float,
        cold: float = 0.0,
        preempted: dict[int, float] | None = None,
    ) -> None:
        self.fixed, self.per_row, self.cold = fixed, per_row, cold
        self.preempted = preempted or {}
        self.wall = self.cpu = 0.0
        self.rows: list[int] = []

    def run(self, rows: int) -> None:
        first = rows not in self.rows
        self.wall += self.preempted.get(len(self.rows), 0.0)
        self.rows.append(rows)
        spent = self.fixed + self.per_row * rows + (self.cold if first else 0.0)
        self.wall += spent
        self.cpu += spent

    def clocks(self) -> tuple[float, float]:
        return self.wall, self.cpu


def test_rows_grow_until_a_run_passes_the_loop_bound() -> None:
    model = Model(10e-6, 2e-6)  # 1 ms at ~500 rows
    measured = measure(model.run, 8, model.clocks)
    assert [t.rows for t in measured.times] == [1, 8, 64, 512]
    assert measured.max_rows == 64  # 512 rows took more than the bound: never run here
    assert measured.one_row_s == pytest.approx(12e-6)
    assert model.rows.count(1) == REPEATS


def test_rows_stop_at_the_byte_and_row_limits() -> None:
    light = Model(1e-6, 0.0)
    assert measure(light.run, 8, light.clocks).max_rows == MAX_MEASURED_ROWS
    assert max(light.rows) == MAX_MEASURED_ROWS
    wide = Model(1e-6, 0.0)
    row_bytes = MEASURE_BYTES // 4  # 8 rows would pass the byte limit
    assert measure(wide.run, row_bytes, wide.clocks).max_rows == 1
    assert max(wide.rows) <= 8


def test_a_preempted_run_is_run_again_and_a_preempted_cold_run_counts_its_cpu() -> None:
    light = Model(10e-6, 0.0, preempted={0: 30e-3, 3: 5e-3, 5: 5e-3})
    measured = measure(light.run, 8, light.clocks)
    assert measured.max_rows == MAX_MEASURED_ROWS
    assert measured.cold_s == pytest.approx(10e-6)
    assert measured.times[0].slowest_s == pytest.approx(10e-6)
    assert light.rows.count(1) == REPEATS + 2  # the two preempted warm runs, again


def test_a_run_slow_on_the_wall_clock_every_time_counts_its_wall_time() -> None:
    every = {i: 5e-3 for i in range(REPEATS + RERUNS + 1)}
    slow = Model(10e-6, 0.0, preempted=every)
    measured = measure(slow.run, 8, slow.clocks)
    assert measured.max_rows == 0
    assert measured.times[0].slowest_s == pytest.approx(5e-3 + 10e-6)


def _measured(one_row: float, cold: float, slowest: float | None = None) -> Measured:
    return Measured((RowTime(1, one_row, slowest or one_row, cold),))


@pytest.mark.parametrize(
    ("mode", "measured", "hop_s", "why"),
    [
        ("auto", _measured(10e-6, 50e-6), 100e-6, ""),
        ("auto", _measured(200e-6, 300e-6), 100e-6, "more than the worker hop"),
        ("auto", _measured(10e-6, COLD_BOUND_S * 2), 100e-6, "its first run took"),
        ("auto", _measured(10e-6, 50e-6, LOOP_BOUND_S * 2), 100e-6, "over the loop bound"),
        ("always", _measured(200e-6, COLD_BOUND_S * 2), 100e-6, ""),
        ("always", _measured(10e-6, 50e-6, LOOP_BOUND_S * 2), 100e-6, "over the loop bound"),
        ("never", _measured(10e-6, 50e-6), 100e-6, "--inline_runs=never"),
    ],
    ids=[
        "light",
        "dearer-than-the-hop",
        "slow-cold",
        "one-row-past-the-bound",
        "always",
        "always-bounded",
        "never",
    ],
)
def test_decide(mode: str, measured: Measured, hop_s: float, why: str) -> None:
    answer = decide(mode, measured, hop_s)
    assert (answer == "") if not why else (why in answer)


def test_a_stall_demotes_for_a_backoff_that_grows_and_merges_across_processes() -> None:
    placement = Placement()
    assert not placement.demoted("m:1", 0.0)
    until = placement.stalled("m:1", 100.0)
    assert until == 100.0 + BACKOFF_S[0]
    assert placement.demoted("m:1", until - 1) and not placement.demoted("m:1", until)
    assert placement.stalled("m:1", until) == until + BACKOFF_S[1]  # a second stall: longer
    other = Placement()  # another front end, or the supervisor, learns it
    count, later = placement.as_wire()["m:1"]
    other.merge("m:1", count, later)
    assert other.demoted("m:1", later - 1)
    other.merge("m:1", 1, 0.0)  # an older record changes nothing
    assert other.demoted("m:1", later - 1)
