"""The workers' own figures on the metrics page: asked for over each worker's channel at scrape.

Each scrape pings every live worker; the ``ping`` reply carries the worker's
:class:`~channel.telemetry.WorkerStats` (measured in the worker process). Series are labelled with
the worker's index; a worker that died is not listed, and its replacement reports its own figures
from zero (counters restart like any restarted process's, which ``rate()`` handles), so nothing of
a dead process stays on the page. A worker that does not answer within ``timeout_s`` (busy with a
long batch) is shown with its previous answer if the process is the same.

- ``tensorgate_worker_info`` gauge {worker, pid}: 1 per live worker;
- ``tensorgate_worker_start_time_seconds`` gauge {worker}: Unix time the process started;
- ``tensorgate_worker_cpu_seconds_total`` counter {worker}: user + system CPU;
- ``tensorgate_worker_resident_memory_bytes`` gauge {worker};
- ``tensorgate_worker_runs_total`` / ``tensorgate_worker_run_errors_total`` counter {worker}:
  batches run / failed;
- ``tensorgate_worker_wakeups_total`` counter {worker}: times the worker woke from sleep to take
  submitted runs (each is one submit doorbell: the gateway rings only a sleeping worker);
- ``tensorgate_model_load_seconds`` gauge {worker, model_name, version}: how long loading that
  version took in that worker;
- read from the pool at scrape: ``tensorgate_worker_restarts_total`` (workers replaced after dying
  or hanging), ``tensorgate_shm_bytes_in_use`` and ``tensorgate_shm_capacity_bytes`` gauges
  {worker, area}: shared memory held by batches in flight and, in ``output``, by responses
  being encoded from it, summed over the worker's channels (with several front ends, each front
  end's channel to the worker adds its own figures: ``shared``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from channel.messages import PingReply
from channel.telemetry import WorkerStats
from gateway.errors import ServingError
from gateway.worker_pool.pool import WorkerPool

PING_TIMEOUT_S = 1.0
"""How long a scrape waits for each worker's figures."""

ShmUse = dict[tuple[str, str], tuple[int, int]]
"""(worker, area) → (bytes in use, capacity in bytes) of shared memory."""


class WorkerFigures:
    """The latest figures of each live worker of ``pool``, refreshed by :meth:`refresh`."""

    def __init__(
        self,
        pool: WorkerPool,
        timeout_s: float = PING_TIMEOUT_S,
        *,
        shared: Callable[[], ShmUse] | None = None,
    ) -> None:
        """``shared``: the shared memory of the workers' other channels (several front ends)."""
        self.pool = pool
        self.timeout_s = timeout_s
        self.latest: dict[int, WorkerStats] = {}
        self.shared = shared

    async def refresh(self) -> None:
        """Ask every live worker for its figures (concurrently, bounded); forget dead ones."""
        links = [link for link in self.pool.links if link.alive]
        replies = await asyncio.gather(*(self._ask(link.ping()) for link in links))
        fresh: dict[int, WorkerStats] = {}
        for link, stats in zip(links, replies, strict=True):
            if stats is None:
                stats = self.latest.get(link.index)
            if stats is not None and stats["pid"] == link.pid:
                fresh[link.index] = stats
        self.latest = fresh

    async def _ask(self, reply: asyncio.Future[PingReply]) -> WorkerStats | None:
        with contextlib.suppress(ServingError, TimeoutError):
            answer = await asyncio.wait_for(asyncio.shield(reply), self.timeout_s)
            return answer.get("stats")
        if not reply.done():
            reply.add_done_callback(_retrieve)
        return None

    def families(self) -> Iterator[Metric]:
        """The families above, plus restarts and shared memory read from the pool now."""
        by_worker = sorted(self.latest.items())
        info = GaugeMetricFamily(
            "tensorgate_worker_info", "1 for each live worker process.", labels=["worker", "pid"]
        )
        start = _gauge("tensorgate_worker_start_time_seconds", "Unix time the worker started.")
        cpu = CounterMetricFamily(
            "tensorgate_worker_cpu_seconds", "CPU seconds (user + system).", labels=["worker"]
        )
        rss = _gauge("tensorgate_worker_resident_memory_bytes", "Resident memory in bytes.")
        runs = CounterMetricFamily("tensorgate_worker_runs", "Batches run.", labels=["worker"])
        wakeups = CounterMetricFamily(
            "tensorgate_worker_wakeups",
            "Times the worker woke to take submitted runs (each is one submit doorbell: the "
            "gateway rings only a sleeping worker).",
            labels=["worker"],
        )
        errors = CounterMetricFamily(
            "tensorgate_worker_run_errors", "Batches that failed.", labels=["worker"]
        )
        loads = GaugeMetricFamily(
            "tensorgate_model_load_seconds",
            "Seconds loading a model version took in a worker.",
            labels=["worker", "model_name", "version"],
        )
        for index, stats in by_worker:
            worker = str(index)
            info.add_metric([worker, str(stats["pid"])], 1)
            start.add_metric([worker], stats["start_time"])
            cpu.add_metric([worker], stats["cpu_seconds"])
            rss.add_metric([worker], stats["rss_bytes"])
            runs.add_metric([worker], stats["runs"])
            wakeups.add_metric([worker], stats["wakeups"])
            errors.add_metric([worker], stats["run_errors"])
            for key, seconds in sorted(stats["load_seconds"].items()):
                model, _, version = key.rpartition(":")
                loads.add_metric([worker, model, version], seconds)
        yield from (info, start, cpu, rss, runs, wakeups, errors, loads)
        yield from self._pool_families()

    def _pool_families(self) -> Iterator[Metric]:
        restarts = CounterMetricFamily(
            "tensorgate_worker_restarts", "Workers replaced after dying or hanging."
        )
        restarts.add_metric([], self.pool.restarts)
        yield restarts
        in_use = GaugeMetricFamily(
            "tensorgate_shm_bytes_in_use",
            "Shared-memory bytes held by batches in flight and responses being encoded.",
            labels=["worker", "area"],
        )
        capacity = GaugeMetricFamily(
            "tensorgate_shm_capacity_bytes",
            "Size of each worker's shared-memory areas.",
            labels=["worker", "area"],
        )
        for (worker, area), (used, size) in self.shm_use().items():
            in_use.add_metric([worker, area], used)
            capacity.add_metric([worker, area], size)
        yield from (in_use, capacity)

    def shm_use(self) -> ShmUse:
        """Each live worker's shared memory in use and its capacity, per area, over the pool's
        channels and the ``shared`` ones."""
        options = self.pool.options
        use: ShmUse = {}
        for link in self.pool.links:
            if not link.alive:
                continue
            worker = str(link.index)
            use[(worker, "input")] = (link.channel.input_used, options.input_bytes)
            use[(worker, "output")] = (link.channel.output_used, options.output_bytes)
        for key, (used, size) in (self.shared() if self.shared else {}).items():
            if key in use:  # a worker that died since is not listed
                was_used, was_size = use[key]
                use[key] = (was_used + used, was_size + size)
        return use


def _gauge(name: str, documentation: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=["worker"])


def _retrieve(future: asyncio.Future[PingReply]) -> None:
    if not future.cancelled():
        future.exception()
