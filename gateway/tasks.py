"""Background tasks that never die silently, and concurrent steps that never outlive a failure.

- a one-shot task of a :class:`Tasks` set: an exception it ends with (other than cancellation)
  is logged at once with its traceback; :meth:`Tasks.close` cancels and awaits them all;
- a periodic loop, :func:`every`: a step that raises is logged with its traceback and the next
  period runs it afresh;
- :func:`gather_all`: steps that succeed or fail together; the first failure cancels the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]


class Tasks:
    """The background tasks of one owner; failures go to ``logger``."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, T], what: str) -> asyncio.Task[T]:
        """Run ``coro`` in a task named ``what`` (used in the failure's log line)."""
        task = asyncio.get_running_loop().create_task(coro, name=what)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self._logger.error(
                "background task %s failed: %s: %s",
                task.get_name(),
                type(error).__name__,
                error,
                exc_info=error,
            )

    async def close(self) -> None:
        """Cancel every task and wait until each has ended."""
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            self._tasks.difference_update(tasks)  # their done-callbacks may not have run yet


async def every(
    period_s: float,
    step: Callable[[], Awaitable[object]],
    *,
    what: str,
    logger: logging.Logger,
    sleep: Sleep = asyncio.sleep,
) -> None:
    """Await ``step()`` every ``period_s`` seconds (after a first wait), until cancelled. A step
    that raises is logged with its traceback as ``what`` and the next period runs it again.
    ``sleep``: the wait (tests inject one)."""
    while True:
        await sleep(period_s)
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.error(
                "%s failed (it runs again in %g s): %s: %s",
                what,
                period_s,
                type(exc).__name__,
                exc,
                exc_info=exc,
            )


async def gather_all(*steps: Awaitable[T]) -> list[T]:
    """The results of ``steps``, run concurrently. The first to fail cancels the others, which
    are awaited before its exception is raised (so is a cancellation of the caller)."""
    tasks = [asyncio.ensure_future(step) for step in steps]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        for task in tasks:
            if not task.cancelled():
                task.exception()  # retrieved: the first failure is the one raised
        raise
