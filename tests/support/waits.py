"""Bounded waits for a state that another thread, process or task reaches: each ends as soon as
the state holds, and fails naming what it waited for once its bound passes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

WAIT_S = 60.0
"""A bound no wait reaches when things work."""
POLL_S = 0.02
"""Between two looks at a state that nothing notifies (another process's)."""


def until(
    condition: Callable[[], object],
    what: str | Callable[[], str],
    timeout_s: float = WAIT_S,
    *,
    poll_s: float = POLL_S,
) -> None:
    """Look at ``condition()`` every ``poll_s`` until it is true; AssertionError ("never saw:
    ``what``") after ``timeout_s`` seconds. ``what`` may be a function, asked only then (to add
    what was seen last, or a log). A ``condition`` that knows the state will never come (the
    process exited) raises its own AssertionError."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            said = what if isinstance(what, str) else what()
            raise AssertionError(f"never saw within {timeout_s} s: {said}")
        time.sleep(poll_s)


async def until_notified(
    changed: asyncio.Event, condition: Callable[[], object], what: str, timeout_s: float = WAIT_S
) -> None:
    """Look at ``condition()`` each time ``changed`` is set (it is cleared before each wait) until
    it is true; AssertionError ("never saw: ``what``") after ``timeout_s`` seconds."""
    try:
        async with asyncio.timeout(timeout_s):
            while not condition():
                changed.clear()
                await changed.wait()
    except TimeoutError:
        raise AssertionError(f"never saw within {timeout_s} s: {what}") from None
