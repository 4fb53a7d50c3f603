"""``settle()``: return once the event loop has nothing left to run, so that a "not yet" assert
after it means "every task is blocked, and it has still not happened".

The loop is idle when no callback is queued, no timer is due and no I/O is pending: it is about
to wait. asyncio asks its selector to wait with ``select(timeout)``, ``timeout`` 0 while anything
is ready, so a selector sees the moment. The tests' loop (:class:`SettlingLoop`, what
``asyncio.run()`` makes in every test: tests/conftest.py installs :class:`SettlingPolicy`) has one
that, when asked to wait while a ``settle()`` is waiting, first looks for I/O without waiting and,
finding none, wakes the ``settle()``. A loop that never becomes idle within SETTLE_S (a task that
keeps itself busy) fails the test, saying so.
"""

from __future__ import annotations

import asyncio
import selectors

SETTLE_S = 10.0
"""How long a loop may stay busy before ``settle()`` fails."""


class _IdleSelector(selectors.EpollSelector):
    """Wakes :attr:`waiters` when the loop asks to wait and no I/O is pending."""

    def __init__(self) -> None:
        super().__init__()
        self.waiters: list[asyncio.Future[None]] = []

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        busy = timeout is not None and timeout <= 0  # a callback is queued or a timer is due
        if busy or not self.waiters:
            return super().select(timeout)
        events = super().select(0)
        if events:
            return events
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        return []


class SettlingLoop(asyncio.SelectorEventLoop):
    """An asyncio loop that can tell when it is idle (:meth:`idle`)."""

    def __init__(self) -> None:
        self._idle_selector = _IdleSelector()
        super().__init__(self._idle_selector)

    async def idle(self, timeout_s: float) -> None:
        """Return once the loop has nothing to run; AssertionError after ``timeout_s``."""
        waiter: asyncio.Future[None] = self.create_future()
        self._idle_selector.waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout_s)
        except TimeoutError:
            raise AssertionError(
                f"the event loop was never idle within {timeout_s} s: something keeps it busy"
            ) from None


class SettlingPolicy(asyncio.DefaultEventLoopPolicy):
    """New loops are :class:`SettlingLoop`\\ s."""

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return SettlingLoop()


async def settle() -> None:
    """Let every task and callback that can run, run, until all are blocked (bounded)."""
    loop = asyncio.get_running_loop()
    if not isinstance(loop, SettlingLoop):
        raise AssertionError(f"settle() needs a SettlingLoop (see tests/conftest.py), not {loop!r}")
    await loop.idle(SETTLE_S)
