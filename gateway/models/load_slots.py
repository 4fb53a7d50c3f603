"""How many version loads may run at once (``--num_load_threads``).

TF Serving loads on a pool of ``num_load_threads`` threads (0: one at a time, in the manager's
own thread), and the first config on ``num_initial_load_threads`` (4 × the CPUs). Here a load
attempt — the workers' load and the warmup — holds one of :class:`LoadSlots` while it runs;
a version waiting for its next retry holds none, so it never delays the others, and one whose
model a new config changes or drops stops waiting for a slot at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque


class LoadSlots:
    """At most :attr:`limit` holders at once, served in arrival order."""

    def __init__(self, limit: int) -> None:
        self._limit = max(1, limit)
        self._busy = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def limit(self) -> int:
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        """A new limit (>= 1); holders over it keep their slot until they leave."""
        self._limit = max(1, value)
        self._admit()

    @property
    def busy(self) -> int:
        """Slots held now."""
        return self._busy

    async def take(self, stop: asyncio.Event) -> bool:
        """Wait for a slot: True once it is held (give it back with :meth:`release`), False
        when ``stop`` is set first (none is held)."""
        if stop.is_set():
            return False
        if self._busy < self._limit and not self._waiting:
            self._busy += 1
            return True
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait((turn, stopped), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # admitted as it was cancelled: the slot goes on
            raise
        finally:
            stopped.cancel()
            if not turn.done():
                turn.cancel()
                with contextlib.suppress(ValueError):
                    self._waiting.remove(turn)
        return not turn.cancelled()

    def release(self) -> None:
        """Give back a slot :meth:`take` gave."""
        self._busy -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiting and self._busy < self._limit:
            turn = self._waiting.popleft()
            if not turn.done():
                self._busy += 1
                turn.set_result(None)
