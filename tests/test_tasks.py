"""Background tasks never die silently: a periodic step that fails is logged
with its traceback and runs again; a one-shot task's failure is logged at once; steps run
together stop together. The wait between periods is injected: no time passes."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gateway.tasks import Tasks, every, gather_all
from tests.support.idle_loop import settle

log = logging.getLogger("tests.tasks")


async def test_a_periodic_step_that_fails_is_logged_and_runs_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    periods: list[int] = []
    third = asyncio.Event()

    async def sleep(seconds: float) -> None:
        assert seconds == 5.0
        if len(periods) == 3:
            third.set()
            await asyncio.Event().wait()  # no fourth period

    async def step() -> None:
        periods.append(len(periods))
        if len(periods) == 2:
            raise ValueError("channel is closed")

    loop = asyncio.create_task(every(5.0, step, what="file system poll", logger=log, sleep=sleep))
    await asyncio.wait_for(third.wait(), 30)
    assert not loop.done()  # the failure did not end it
    loop.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loop
    assert periods == [0, 1, 2]
    (record,) = caplog.records
    assert record.getMessage() == (
        "file system poll failed (it runs again in 5 s): ValueError: channel is closed"
    )
    assert record.levelno == logging.ERROR and record.exc_info is not None


async def test_a_failed_task_is_logged_at_once_and_close_ends_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = Tasks(log)

    async def fail() -> None:
        raise RuntimeError("boom")

    waiting = tasks.spawn(asyncio.Event().wait(), "idle")
    tasks.spawn(fail(), "restart of worker 1")
    await settle()
    assert len(tasks) == 1
    await tasks.close()
    assert [waiting.cancelled(), len(tasks) == 0] == [True, True]
    (record,) = caplog.records
    assert record.getMessage() == "background task restart of worker 1 failed: RuntimeError: boom"
    assert record.exc_info is not None


async def test_steps_run_together_stop_together() -> None:
    slow = asyncio.Event()

    async def wait() -> int:
        await slow.wait()
        return 1

    async def fail() -> int:
        raise ValueError("worker 0 exited")

    other = asyncio.ensure_future(wait())
    with pytest.raises(ValueError, match="worker 0 exited"):
        await gather_all(other, fail())
    assert other.cancelled()
