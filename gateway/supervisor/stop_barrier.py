"""Several front ends stop together: none answers its held refusals before all have begun to.

Each draining front end holds its last refusals, begins its gRPC shutdown (GOAWAY, listeners
closed) and then asks the supervisor (``shutting_down``) before answering them
(:func:`gateway.drain.shut_down`). A client whose refusal is answered calls again on a new
connection; if another front end still listened, that call could land there just as it shuts
down and be cancelled inside grpc. So the supervisor answers every ``shutting_down`` once each
front end it is stopping has asked, or has exited: then no listener is left for such a call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from gateway.supervisor.frontends import FrontEndProcess


class StopBarrier:
    """Front ends met at the shutdown: :meth:`arrive` returns once all of :meth:`expect`'s have
    arrived or exited (at once when the supervisor is not stopping them)."""

    def __init__(self) -> None:
        self._expected: list[FrontEndProcess] = []
        """Set with :attr:`_open` (None: the supervisor is not stopping front ends)."""
        self._arrived: set[FrontEndProcess] = set()
        self._open: asyncio.Future[None] | None = None

    def expect(self, fronts: Iterable[FrontEndProcess]) -> None:
        """The supervisor stops ``fronts`` (they will arrive)."""
        self._expected = list(fronts)
        self._open = asyncio.get_running_loop().create_future()
        self.check()

    async def arrive(self, front: FrontEndProcess) -> None:
        """``front`` has begun its shutdown; return when the others have too."""
        if self._open is None:
            return  # a front end stopping alone (its own SIGTERM): nobody to wait for
        self._arrived.add(front)
        self.check()
        await asyncio.shield(self._open)

    def check(self) -> None:
        """Open once every expected front end arrived or exited (call on each exit too)."""
        if self._open is None or self._open.done():
            return
        if all(f in self._arrived or not f.alive for f in self._expected):
            self._open.set_result(None)
