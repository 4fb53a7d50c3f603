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
    Measured,
    Placement,
    RowTime,
    decide,
    measure,
)


class Model:
    """Runs that take ``fixed + per_row × rows`` seconds of both clocks (the first of each row
    count ``cold`` more); ``rows``: what it was run on."""

    def __init__(self, fixed: float, per_row: float, cold: float = 0.0) -> None:
        self.fixed, self.per_row, self.cold = fixed, per_row, cold
        self.now = 0.0
        self.rows: list[int] = []

    def run(self, rows: int) -> None:
        first = rows not in self.rows
        self.rows.append(rows)
        self.now += self.fixed + self.per_row * rows + (self.cold if first else 0.0)

    def clocks(self) -> tuple[float, float]:
        return self.now, self.now


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
