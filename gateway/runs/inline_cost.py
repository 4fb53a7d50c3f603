"""Where a version runs, by measured cost: in each front end (``frontend``) or on the workers.

The worker hop (descriptor, doorbell, two context switches, the worker's Python) costs more than
a light model's run. Under ``--inline_runs=auto`` (the default) a version runs in the front end
itself, on the event loop, when all of this holds; the workers hold every version either way, so
a move between the two never fails a call:

1. **Its cost depends on the rows alone** (:mod:`gateway.runs.onnx_graph`): an ONNX version
   on ONNX Runtime with fixed non-batch dimensions and no op a caller's values can size.
2. **It fits the front end's budget** (``--inline_budget_mb``): the whole version directory
   (external weights included) plus the memory its session took when loaded.
3. **It is cheaper here than the hop**: measured in the front end right after loading, the
   median of :data:`REPEATS` one-row runs (wall time and this thread's CPU time, the larger;
   a run the machine preempted is run again) is at most the hop (:data:`HOP_S` until the front
   end has timed its own worker round trips), and the first (cold) run took at most
   :data:`COLD_BOUND_S`.

**The loop bound.** Rows are the only thing a caller can grow, so the front end measures the
version at growing row counts (×8 from 1) up to the largest whose slowest run stays within
:data:`LOOP_BOUND_S` (and whose inputs and outputs stay within :data:`MEASURE_BYTES`); that row
count is the version's ``max_rows``. A batch of more rows is never run here: it goes to the
workers before it runs. A run that still holds the loop past :data:`WALL_LIMIT_S` (a machine
that stalls, a forced placement) is stopped by :mod:`gateway.runs.inline_watch` and re-run
on a worker.

**Staying put** (:class:`Placement`). Ordinary traffic never moves a version: isolated runs cost
more than back-to-back ones (cold caches), so no ratio to the load-time figure counts. A version
leaves the front end only on a *stall*: a run whose CPU time exceeded :data:`STALL_S` (the model
itself computed that long), or one stopped at the wall-clock limit while computing. It comes
back after :data:`BACKOFF_S` (longer each time it stalls again: hysteresis), measured afresh.
With several front ends the supervisor keeps the demotions, so a front end that restarts does
not place a stalling version again.

``--inline_runs=always`` runs every ONNX version that loads in the front end (rule 3 and the
static rule skipped; still bounded by ``max_rows`` and the wall-clock limit); ``never`` keeps all
on the workers.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

HOP_S: Final = 100e-6
"""The worker hop's cost per run (seconds) before a measurement: the CPU of one round trip on a
shared core here (doorbell, two context switches, the worker's Python per run)."""
LOOP_BOUND_S: Final = 1e-3
"""The longest a run in the front end may hold the event loop by measurement (seconds)."""
WALL_LIMIT_S: Final = 0.05
"""A run in the front end still going after this long (seconds, wall clock) is stopped and
re-run on a worker (:mod:`gateway.runs.inline_watch`)."""
COLD_BOUND_S: Final = 0.02
"""The longest the first run after loading may take (seconds) for the version to run here."""
STALL_S: Final = 5 * LOOP_BOUND_S
"""A run whose CPU time exceeds this (seconds) is a stall: the version leaves the front end."""
BACKOFF_S: Final = (60.0, 300.0, 1800.0)
"""How long a stalled version stays on the workers, by how many times it stalled (the last
repeats)."""
REPEATS: Final = 9
"""Runs per measured row count (the first, cold, is not counted in the median)."""
ROW_STEP: Final = 8
"""Row counts measured: 1, 8, 64, ... (while within the bounds)."""
MAX_MEASURED_ROWS: Final = 4096
"""The most rows ever measured (and so ever run in a front end in one run)."""
MEASURE_BYTES: Final = 16 * 1024 * 1024
"""The most input plus output bytes a measured run may take."""
PREEMPTED_S: Final = LOOP_BOUND_S / 2
"""Wall time past the thread's CPU time (seconds) that marks a measured run the machine
preempted: the scheduler's time, not the model's."""
RERUNS: Final = 3
"""Times a preempted warm run is run again before its wall time counts (a cold run, which cannot
be repeated, counts its CPU time instead)."""


@dataclass(frozen=True)
class RowTime:
    """Seconds per run of one row count: the median and the slowest warm run, and the cold
    (first) one; each the larger of wall time and this thread's CPU time."""

    rows: int
    median_s: float
    slowest_s: float
    cold_s: float


@dataclass(frozen=True)
class Measured:
    """A version's runs in the front end at growing row counts (:func:`measure`)."""

    times: tuple[RowTime, ...]

    @property
    def one_row_s(self) -> float:
        return self.times[0].median_s

    @property
    def cold_s(self) -> float:
        return self.times[0].cold_s

    @property
    def max_rows(self) -> int:
        """The most rows measured within :data:`LOOP_BOUND_S` (0: not even one row)."""
        fitting = [t.rows for t in self.times if t.slowest_s <= LOOP_BOUND_S]
        return max(fitting, default=0)


Run = Callable[[int], None]
"""Runs the version once on zeros of ``rows`` rows."""
Clocks = Callable[[], tuple[float, float]]
"""(wall seconds, this thread's CPU seconds) now."""


def measure(run: Run, row_bytes: int, clocks: Clocks, *, limit_rows: int = 0) -> Measured:
    """Time ``run`` at 1, 8, 64, ... rows, :data:`REPEATS` runs each, while the slowest run
    stays within :data:`LOOP_BOUND_S`, the rows within ``limit_rows`` (0: no limit) and
    :data:`MAX_MEASURED_ROWS`, and ``rows × row_bytes`` (inputs and outputs) within
    :data:`MEASURE_BYTES`."""
    times = []
    rows = 1
    while True:
        runs = [_timed(run, rows, clocks, cold=True)]
        runs += [_timed(run, rows, clocks, cold=False) for _ in range(REPEATS - 1)]
        warm = runs[1:]
        times.append(RowTime(rows, statistics.median(warm), max(warm), runs[0]))
        rows *= ROW_STEP
        if (
            max(warm) > LOOP_BOUND_S
            or rows > MAX_MEASURED_ROWS
            or (limit_rows and rows > limit_rows)
            or rows * row_bytes > MEASURE_BYTES
        ):
            return Measured(tuple(times))


def _timed(run: Run, rows: int, clocks: Clocks, *, cold: bool) -> float:
    """One run's seconds, the larger of wall and CPU time; a preempted run (:data:`PREEMPTED_S`)
    is run again up to :data:`RERUNS` times, or counts its CPU time when ``cold``."""
    for _ in range(1 if cold else RERUNS + 1):
        wall, cpu = clocks()
        run(rows)
        wall_end, cpu_end = clocks()
        wall_s, cpu_s = wall_end - wall, cpu_end - cpu
        if wall_s - cpu_s <= PREEMPTED_S:
            return max(wall_s, cpu_s)
    return cpu_s if cold else wall_s


def decide(mode: str, measured: Measured, hop_s: float) -> str:
    """Why a version measured so runs on the workers under ``mode``, or "" when it runs here."""
    if mode == "never":
        return "--inline_runs=never"
    if measured.max_rows < 1:
        return f"one row takes {measured.times[0].slowest_s * 1e3:.2f} ms, over the loop bound"
    if mode == "always":
        return ""
    if measured.cold_s > COLD_BOUND_S:
        return f"its first run took {measured.cold_s * 1e3:.1f} ms"
    if measured.one_row_s > hop_s:
        return (
            f"a one-row run takes {measured.one_row_s * 1e6:.0f} µs, more than the worker hop's "
            f"{hop_s * 1e6:.0f} µs"
        )
    return ""


@dataclass
class Stalls:
    """One version's stalls: how many, and until when (``time.monotonic()`` seconds) it stays
    on the workers."""

    count: int = 0
    until: float = 0.0


@dataclass
class Placement:
    """The demotions of every version (a front end's own, or the supervisor's for all):
    :meth:`stalled` records one, :meth:`demoted` says whether a version must stay on the
    workers now."""

    stalls: dict[str, Stalls] = field(default_factory=dict)

    def stalled(self, key: str, now: float) -> float:
        """Record a stall of ``key`` at ``now``; until when it stays on the workers."""
        record = self.stalls.setdefault(key, Stalls())
        record.until = now + BACKOFF_S[min(record.count, len(BACKOFF_S) - 1)]
        record.count += 1
        return record.until

    def merge(self, key: str, count: int, until: float) -> None:
        """Take another process's record of ``key`` (the later one wins)."""
        record = self.stalls.setdefault(key, Stalls())
        if until > record.until:
            record.until, record.count = until, max(count, record.count)

    def demoted(self, key: str, now: float) -> bool:
        record = self.stalls.get(key)
        return record is not None and now < record.until

    def as_wire(self) -> dict[str, tuple[int, float]]:
        return {key: (s.count, s.until) for key, s in self.stalls.items()}
