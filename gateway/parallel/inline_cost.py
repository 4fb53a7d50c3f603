"""Where a version runs, by measured cost: in each front end (``frontend``) or on the workers.

A version whose runs cost less than the worker hop (descriptor, doorbell, two context switches,
the worker's Python) runs in the front end itself (:mod:`gateway.parallel.inline_link`), on the
event loop, at the end of the loop turn its calls arrived in; everything else runs on the
workers, which hold every version either way, so a move between the two never fails a call. The
rule, for ``--inline_runs=auto`` (the default):

- candidates are ONNX versions whose model file fits what is left of the front end's budget
  (``--inline_budget_mb``); TensorFlow versions always stay on the workers;
- at load, a front end measures its own session at 1, 8 and 64 rows (the median CPU time of
  :data:`REPEATS` runs each) and fits ``fixed + per_row × rows``; a version whose one-row run
  costs more than the worker hop (:data:`HOP_S` until the front end has timed its own worker
  round trips) stays on the workers;
- the loop is never held by one run for more than :data:`LOOP_BOUND_S`: a batch whose predicted
  time is longer goes to the workers;
- it keeps measuring: each run's CPU time against the prediction; when the moving ratio (weight
  :data:`WEIGHT`, after :data:`SETTLE_RUNS` runs) passes :data:`SLOW_RATIO`, or one run holds
  the loop more than :data:`STALL_S`, the version moves to the workers for good (logged, and
  the metric says so).

``--inline_runs=always`` runs every ONNX version that loads in the front end (still bounded by
:data:`LOOP_BOUND_S` per batch); ``never`` keeps all on the workers (the process path).
"""

from __future__ import annotations

from dataclasses import dataclass

HOP_S = 100e-6
"""The worker hop's cost per run (seconds) before a measurement: the CPU of one round trip on a
shared core here (doorbell, two context switches, the worker's Python per run)."""
LOOP_BOUND_S = 1e-3
"""The longest a predicted in-front-end run may hold the event loop (seconds)."""
STALL_S = 5e-3
"""One run longer than this (seconds) moves its version to the workers at once."""
SLOW_RATIO = 10.0
"""Moving ratio of measured to predicted run time past which a version moves to the workers."""
WEIGHT = 0.05
"""Weight of the newest run in the moving ratio."""
REPEATS = 21
"""Runs per measured batch size at load (the median counts)."""
SETTLE_RUNS = 50
"""Runs under load before the moving ratio may move a version (a stall moves it at once)."""
MEASURED_ROWS = (1, 8, 64)
"""Batch sizes timed at load."""


@dataclass
class RunCost:
    """A version's measured run time in a front end: ``fixed_s + per_row_s × rows``."""

    fixed_s: float
    per_row_s: float
    ratio: float = 1.0
    """Moving ratio of measured to predicted run times under load."""
    runs: int = 0
    """Runs recorded under load."""

    @classmethod
    def fit(cls, times: dict[int, float]) -> RunCost:
        """The line through the smallest and largest measured batch (``rows → seconds``)."""
        lo, hi = min(times), max(times)
        per_row = max(0.0, (times[hi] - times[lo]) / (hi - lo)) if hi > lo else 0.0
        return cls(max(0.0, times[lo] - per_row * lo), per_row)

    def predict(self, rows: int) -> float:
        return self.fixed_s + self.per_row_s * max(rows, 1)

    def fits_loop(self, rows: int) -> bool:
        """Whether a batch of ``rows`` may run on the loop (:data:`LOOP_BOUND_S`)."""
        return self.predict(rows) <= LOOP_BOUND_S

    def record(self, rows: int, seconds: float) -> bool:
        """Note one run under load; True when the version should move to the workers."""
        predicted = max(self.predict(rows), 1e-6)
        self.ratio += WEIGHT * (seconds / predicted - self.ratio)
        self.runs += 1
        return seconds > STALL_S or (self.runs >= SETTLE_RUNS and self.ratio > SLOW_RATIO)


def decide(mode: str, cost: RunCost, hop_s: float) -> bool:
    """Whether a version measured at ``cost`` runs in the front end under ``mode``, with the
    worker hop costing ``hop_s`` seconds per run."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    return cost.predict(1) <= hop_s
