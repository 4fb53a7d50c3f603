"""One worker process as the supervisor holds it: a real worker, started, stopped politely,
killed and reaped (every link's pending requests then fail), killed when it will not stop."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from gateway.errors import Unavailable
from gateway.runs.dispatcher import Dispatcher
from gateway.worker_pool.process import WorkerProcess

WAIT_S = 60.0
"""Bound of every wait (never reached when things work)."""


@asynccontextmanager
async def _started_worker() -> AsyncIterator[tuple[WorkerProcess, list[int]]]:
    """A started worker and the exit codes its reaping returned (killed at the end)."""
    codes: list[int] = []
    dispatcher = Dispatcher()
    worker = WorkerProcess.spawn(
        0,
        input_bytes=1 << 16,
        output_bytes=1 << 16,
        log_format="text",
        dispatcher=dispatcher,
        on_exit=lambda w: codes.append(w.reap()),
    )
    try:
        ready = await asyncio.wait_for(worker.control.ready, WAIT_S)
        assert ready["pid"] == worker.pid == worker.control.pid
        assert dispatcher.links == [worker.runs] and worker.runs.channel is worker.control.channel
        worker.endpoint.open()
        yield worker, codes
    finally:
        worker.kill()
        await asyncio.wait_for(worker.exited, WAIT_S)


async def test_a_live_worker_stops_when_asked() -> None:
    async with _started_worker() as (worker, codes):
        await worker.stop(WAIT_S)
        assert codes == [0] and not worker.alive and worker.endpoint.channel.closed


async def test_a_killed_worker_is_reaped_and_what_its_links_await_fails() -> None:
    async with _started_worker() as (worker, codes):
        os.kill(worker.pid, signal.SIGSTOP)  # the ping stays unanswered
        ping = worker.control.ping()
        worker.kill()
        with pytest.raises(Unavailable, match=r"worker 0 exited \(code -9\)"):
            await asyncio.wait_for(ping, WAIT_S)
        assert codes == [-9] and worker.exited.done() and not worker.alive


async def test_a_worker_that_does_not_stop_in_time_is_killed() -> None:
    async with _started_worker() as (worker, codes):
        os.kill(worker.pid, signal.SIGSTOP)  # cannot take the stop request
        await worker.stop(0.01)
        assert codes == [-9]


async def test_a_retired_worker_fails_its_runs_with_the_reason_then_dies() -> None:
    async with _started_worker() as (worker, codes):
        os.kill(worker.pid, signal.SIGSTOP)
        ping = worker.control.ping()
        worker.retire(Unavailable("worker 0 stopped answering: a run of m:1 (1 rows) ..."))
        with pytest.raises(Unavailable, match="stopped answering"):
            await ping
        await asyncio.wait_for(worker.exited, WAIT_S)
        assert codes == [-9]
