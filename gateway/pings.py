"""Pinging live peers (workers, front ends) and killing those that do not answer in time.

Every ``interval_s`` (a supervised loop, :func:`gateway.tasks.every`) each live peer is pinged in a
task of its own, so a silent one delays no other's; a peer has at most one ping outstanding, so a
stopped one is pinged (and killed) once, not once per period. A ping not answered within
``timeout_s`` is logged and the peer killed (its exit is then handled as any death); one that
fails with a ServingError means the peer is gone already: its exit handling does the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, TypeVar

from gateway.errors import ServingError
from gateway.tasks import Tasks, every

log = logging.getLogger(__name__)

P = TypeVar("P")


class Pinger(Generic[P]):
    """Pings the peers ``live()`` returns with ``ping(peer)`` and calls ``kill(peer)`` on those
    that do not answer within ``timeout_s``; ``name(peer)`` names one in the log (``worker 1
    (pid 123)``), ``what`` the whole loop; the pings run in ``tasks``."""

    def __init__(
        self,
        live: Callable[[], Iterable[P]],
        *,
        ping: Callable[[P], Awaitable[object]],
        kill: Callable[[P], None],
        name: Callable[[P], str],
        interval_s: float,
        timeout_s: float,
        tasks: Tasks,
        what: str,
    ) -> None:
        self._live = live
        self._ping_peer = ping
        self._kill = kill
        self._name = name
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._tasks = tasks
        self._what = what
        self._pinging: set[P] = set()
        """Peers with a ping outstanding (one at a time each)."""

    async def run(self) -> None:
        """Ping every ``interval_s``; runs until cancelled."""
        await every(self._interval_s, self.ping_all, what=self._what, logger=log)

    async def ping_all(self) -> None:
        """Start a ping of each live peer that has none outstanding."""
        for peer in list(self._live()):
            if peer not in self._pinging:
                self._pinging.add(peer)
                self._tasks.spawn(self._ping(peer), f"ping of {self._name(peer)}")

    async def _ping(self, peer: P) -> None:
        try:
            await asyncio.wait_for(self._ping_peer(peer), self._timeout_s)
        except TimeoutError:
            log.error(
                "%s did not answer a ping in %.1f s; killing it", self._name(peer), self._timeout_s
            )
            self._kill(peer)
        except ServingError:
            pass  # it is gone; its exit is handled as any other
        finally:
            self._pinging.discard(peer)
