"""Per model version figures since start, as Triton's statistics extension reports them.

Kept by the batch queues' observers (:mod:`~gateway.observability.batches`) when metrics are on,
whatever the protocol of the requests, and read by the Open Inference Protocol's statistics
(``ModelStatistics``, ``GET /v2/models/{m}/stats``). All on the loop; durations in nanoseconds:

- ``queue``: per request that joined a batch, its wait in the batch queue;
- ``success`` / ``fail``: per batch member whose batch's run succeeded / failed, the time from
  its enqueueing to its batch's end (a request refused before it ran is not counted);
- ``compute_infer``: per successful member, its batch's model run as the worker measured it;
- ``inference_count``: rows of the successful runs; ``execution_count``: successful runs;
- ``batches``: per executed batch size (rows the model ran, padding included), the runs and
  their compute time;
- ``last_inference_ms``: wall-clock milliseconds since the epoch of the latest successful run.

A request split over several batches (``enable_large_batch_splitting``) counts once per part.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

NS = 1_000_000_000


@dataclass(slots=True)
class Duration:
    """A count and the nanoseconds summed over it."""

    count: int = 0
    ns: int = 0

    def add(self, count: int, ns: int) -> None:
        self.count += count
        self.ns += ns


@dataclass(slots=True)
class VersionStats:
    """One model version's figures (see the module doc)."""

    last_inference_ms: int = 0
    inference_count: int = 0
    execution_count: int = 0
    success: Duration = field(default_factory=Duration)
    fail: Duration = field(default_factory=Duration)
    queue: Duration = field(default_factory=Duration)
    compute_infer: Duration = field(default_factory=Duration)
    batches: dict[int, Duration] = field(default_factory=dict)
    """Executed batch size → its runs and their compute nanoseconds."""


class ModelStats:
    """The figures of every model version that has run, by (model name, version string)."""

    def __init__(self) -> None:
        self.versions: dict[tuple[str, str], VersionStats] = {}

    def of(self, model: str, version: str) -> VersionStats:
        """The figures of one version (created empty on first use)."""
        stats = self.versions.get((model, version))
        if stats is None:
            stats = self.versions[(model, version)] = VersionStats()
        return stats

    def get(self, model: str, version: str) -> VersionStats:
        """The figures of one version; empty ones when it has not run (nothing is created)."""
        return self.versions.get((model, version)) or VersionStats()


def record_run(
    stats: VersionStats,
    waits_s: Sequence[float],
    run_s: float,
    rows: int,
    executed_rows: int,
    compute_us: float | None,
) -> None:
    """One batch's end: ``waits_s`` its members' queue waits, ``run_s`` seconds from its posting
    to its end, ``rows`` its members' rows and ``executed_rows`` with padding; ``compute_us``:
    the worker's run time, None when the run failed."""
    members = len(waits_s)
    elapsed_ns = int((sum(waits_s) + members * run_s) * NS)
    if compute_us is None:
        stats.fail.add(members, elapsed_ns)
        return
    compute_ns = int(compute_us * 1000)
    stats.success.add(members, elapsed_ns)
    stats.compute_infer.add(members, members * compute_ns)
    stats.inference_count += rows
    stats.execution_count += 1
    batch = stats.batches.get(executed_rows)
    if batch is None:
        batch = stats.batches[executed_rows] = Duration()
    batch.add(1, compute_ns)
    stats.last_inference_ms = time.time_ns() // 1_000_000
