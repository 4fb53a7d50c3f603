"""Draining and the concurrency bound, shared by the gRPC gate and the REST front.

An API call is *refused* (UNAVAILABLE) when the server is draining, or when it is bounded and
``max_concurrent`` calls are already in flight (0: no bound); otherwise it *enters* and, when it
is done, *leaves*. :meth:`CallAdmission.wait_idle` returns once nothing is in flight (the drain's
last step).
"""

from __future__ import annotations

import asyncio
import time

from gateway.errors import Unavailable

DRAINING = "the server is shutting down; retry on another replica"


class CallAdmission:
    """Counts the calls in flight; counters are for tests and metrics."""

    def __init__(self, max_concurrent: int = 0) -> None:
        self.max_concurrent = max_concurrent
        self.draining = False
        self.in_flight = 0
        self.refused_busy = 0
        self.last_arrival = 0.0
        """``time.monotonic()`` when the latest API call arrived."""
        self._idle: asyncio.Event | None = None

    def refusal(self, bounded: bool = True) -> Unavailable | None:
        """Record an arrival; the UNAVAILABLE answer when draining or (``bounded``) at the limit,
        else None."""
        self.last_arrival = time.monotonic()
        if self.draining:
            return Unavailable(DRAINING)
        if bounded and self.max_concurrent and self.in_flight >= self.max_concurrent:
            self.refused_busy += 1
            return Unavailable(
                f"the server is busy ({self.in_flight} requests in progress, the limit of "
                "--max_concurrent_requests); retry later"
            )
        return None

    def enter(self) -> None:
        self.in_flight += 1  # the gRPC gate's wrapper counts inline (one call less per call)

    def leave(self) -> None:
        self.in_flight -= 1
        if not self.in_flight and self._idle is not None:
            self._idle.set()

    def start_draining(self) -> None:
        """Refuse every new call from now on (UNAVAILABLE)."""
        self.draining = True

    async def wait_idle(self) -> None:
        """Return once no counted call is running."""
        while self.in_flight:
            self._idle = asyncio.Event()
            await self._idle.wait()
