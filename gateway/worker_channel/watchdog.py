"""Hung-worker detection from the runs themselves, not only from a slow ping.

Every completed run reports its compute time; :class:`RunTimes` keeps, per servable, a moving
average of the time per run and per row. A run is *hung* when it has been computing for longer
than ``max(min_s, factor × expected)`` — its expected time being the larger of the servable's
average run and its average row time × the run's rows. A run computes from when it was posted, or
from when the worker finished the run before it (a worker runs one at a time, in order). Before a
servable has been timed there is no expectation, and only the ping timeout applies.

:func:`hung_run` is the pure decision; :class:`~gateway.worker_pool.pool.WorkerPool` checks every
live worker each ``check_s`` and kills (then replaces) one whose oldest run is hung, failing its
runs with UNAVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass

WEIGHT = 0.2
"""Weight of the newest run in the moving averages."""


@dataclass(frozen=True)
class HangPolicy:
    """``min_s``: never call a run hung sooner (seconds); ``factor``: how many times its expected
    time a run may take; ``check_s``: seconds between checks."""

    min_s: float = 2.0
    factor: float = 10.0
    check_s: float = 0.5


@dataclass
class _Average:
    per_run_s: float
    per_row_s: float


class RunTimes:
    """Moving averages of compute time per servable key."""

    def __init__(self) -> None:
        self._by_key: dict[str, _Average] = {}

    def record(self, key: str, rows: int, seconds: float) -> None:
        per_row = seconds / max(rows, 1)
        average = self._by_key.get(key)
        if average is None:
            self._by_key[key] = _Average(seconds, per_row)
            return
        average.per_run_s += WEIGHT * (seconds - average.per_run_s)
        average.per_row_s += WEIGHT * (per_row - average.per_row_s)

    def expected_s(self, key: str, rows: int) -> float | None:
        """How long a run of ``rows`` rows of ``key`` should compute; None if never timed."""
        average = self._by_key.get(key)
        if average is None:
            return None
        return max(average.per_run_s, average.per_row_s * rows)


def hung_run(
    policy: HangPolicy, times: RunTimes, key: str, rows: int, computing_s: float
) -> float | None:
    """The limit a run has passed (seconds), or None while it is within it or untimed."""
    expected = times.expected_s(key, rows)
    if expected is None:
        return None
    limit = max(policy.min_s, policy.factor * expected)
    return limit if computing_s > limit else None
