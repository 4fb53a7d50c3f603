"""Noticing a front end that is alive but stuck (SIGSTOPped, a blocked loop), and replacing it.

A front end's event loop never blocks (:mod:`gateway.frontend.frontend_process`), so it answers a
``ping`` over its link at once. Every ``interval_s`` the supervisor pings each joined front end; one
that has not answered within ``timeout_s`` is dead to it: SIGKILLed (its connections fail, as a
SIGKILL's do, and the kernel stops handing it new ones), and its exit is then handled as any front
end's death — replaced at once.

This is also the one bound on every supervisor wait for a front end's acknowledgement (a
registry snapshot, a drain before an unload, a metrics scrape): such a wait ends when the front
end answers or, once it is killed, when its link closes (:mod:`gateway.ipc.link` fails the
calls waiting). So a stopped front end is killed within ``interval_s + timeout_s``
(``--frontend_ping_interval_seconds`` + ``--frontend_ping_timeout_seconds``, 15 s by default),
and a reload or unload through another front end waits on it no longer than that.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from gateway.errors import ServingError
from gateway.supervisor.frontends import FrontEndProcess
from gateway.tasks import Tasks, every

log = logging.getLogger(__name__)


class FrontEndPings:
    """Pings the front ends ``live()`` returns and kills those that do not answer in time."""

    def __init__(
        self,
        live: Callable[[], Iterable[FrontEndProcess]],
        *,
        interval_s: float,
        timeout_s: float,
        tasks: Tasks,
    ) -> None:
        self._live = live
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._tasks = tasks
        self._pinging: set[FrontEndProcess] = set()
        """Front ends with a ping outstanding (one at a time each)."""

    async def run(self) -> None:
        """Ping every ``interval_s``; runs until cancelled."""
        await every(self._interval_s, self.ping_all, what="front-end pings", logger=log)

    async def ping_all(self) -> None:
        """Start a ping of each live front end that has none outstanding (each in its own task,
        so a silent one delays no other's)."""
        for front in list(self._live()):
            if front.alive and front not in self._pinging:
                self._pinging.add(front)
                self._tasks.spawn(self._ping(front), f"ping of front end {front.slot}")

    async def _ping(self, front: FrontEndProcess) -> None:
        try:
            await asyncio.wait_for(front.link.call("ping"), self._timeout_s)
        except TimeoutError:
            log.error(
                "front end %d (pid %d) did not answer a ping in %.1f s; killing it",
                front.slot,
                front.pid,
                self._timeout_s,
            )
            front.kill()
        except ServingError:
            pass  # it is gone; its exit is handled as any other
        finally:
            self._pinging.discard(front)
