"""The workers' own figures on the metrics page, asked of a real worker pool at each scrape: live
workers only, a busy worker's previous answer, a replacement's own figures."""

from __future__ import annotations

import os
import signal

from prometheus_client.core import Metric

from gateway.observability.workers import WorkerFigures
from gateway.worker_pool.pool import PoolOptions
from tests.support.pool_runs import started_pool
from tests.support.waits import until_notified

ARENA = 1 << 16


ONE_WORKER = PoolOptions(workers=1, input_bytes=ARENA, output_bytes=ARENA, ping_interval_s=3600)
"""A one-worker pool, pings far apart."""


def _samples(families: list[Metric]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in families
        for sample in family.samples
    }


async def test_each_scrape_asks_every_live_worker_and_reads_the_pool() -> None:
    async with started_pool(ONE_WORKER) as (pool, _changed):
        figures = WorkerFigures(pool)
        assert not any(f.samples for f in list(figures.families())[:8])  # nothing asked yet
        await figures.refresh()
        (pid,) = pool.pids()
        samples = _samples(list(figures.families()))
        assert samples[("tensorgate_worker_info", (("pid", str(pid)), ("worker", "0")))] == 1
        assert samples[("tensorgate_worker_runs_total", (("worker", "0"),))] == 0
        wakeups = samples[("tensorgate_worker_wakeups_total", (("worker", "0"),))]
        assert wakeups == figures.latest[0]["wakeups"]
        assert samples[("tensorgate_worker_cpu_seconds_total", (("worker", "0"),))] > 0
        assert samples[("tensorgate_worker_restarts_total", ())] == 0
        capacity = ("tensorgate_shm_capacity_bytes", (("area", "input"), ("worker", "0")))
        assert samples[capacity] == ARENA


async def test_a_busy_worker_shows_its_previous_answer_and_a_replaced_one_its_own() -> None:
    async with started_pool(ONE_WORKER) as (pool, changed):
        figures = WorkerFigures(pool, timeout_s=0.2)
        await figures.refresh()
        (old_pid,) = pool.pids()
        os.kill(old_pid, signal.SIGSTOP)  # does not answer the next ping
        try:
            await figures.refresh()
            assert figures.latest[0]["pid"] == old_pid
        finally:
            os.kill(old_pid, signal.SIGKILL)
        await until_notified(
            changed, lambda: pool.restarts == 1 and pool.all_alive(), "the worker restarted"
        )
        (new_pid,) = pool.pids()
        assert new_pid != old_pid
        await figures.refresh()
        assert figures.latest[0]["pid"] == new_pid
        samples = _samples(list(figures.families()))
        assert samples[("tensorgate_worker_restarts_total", ())] == 1
        info = [labels for name, labels in samples if name == "tensorgate_worker_info"]
        assert info == [(("pid", str(new_pid)), ("worker", "0"))]  # the dead one is gone
