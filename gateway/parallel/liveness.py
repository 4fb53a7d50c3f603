"""Noticing a worker that is alive but stuck, and killing it (its exit is then handled as a death).

Two signs, each checked periodically over the live workers: a ping over the control link not
answered within ``ping_timeout_s`` (every ``ping_interval_s``), and a run that has computed far
longer than its servable's runs do (every ``hang.check_s``; the decision is the run side's,
:meth:`Dispatcher.hung <gateway.parallel.dispatcher.Dispatcher.hung>`, from
:mod:`gateway.parallel.watchdog`). A hung run's worker is retired first, so its requests fail with
the message that says why, then killed. Both loops are supervised
(:func:`gateway.tasks.every`): a check that fails is logged and runs again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from gateway.errors import ServingError, Unavailable
from gateway.parallel.dispatcher import Dispatcher
from gateway.parallel.process import WorkerProcess
from gateway.parallel.watchdog import HangPolicy
from gateway.tasks import every

log = logging.getLogger(__name__)


class Liveness:
    """Watches the workers ``live()`` returns (seconds as in
    :class:`~gateway.parallel.pool.PoolOptions`); ``spawn`` runs a ping in a task of the pool's,
    so that one slow worker never delays the others' pings."""

    def __init__(
        self,
        live: Callable[[], list[WorkerProcess]],
        dispatcher: Dispatcher,
        *,
        ping_interval_s: float,
        ping_timeout_s: float,
        hang: HangPolicy,
        spawn: Callable[[Coroutine[Any, Any, None]], object],
    ) -> None:
        self._live = live
        self._dispatcher = dispatcher
        self._ping_interval_s = ping_interval_s
        self._ping_timeout_s = ping_timeout_s
        self._hang = hang
        self._spawn = spawn

    async def pings(self) -> None:
        """Ping every live worker each ``ping_interval_s``; runs until cancelled."""
        await every(self._ping_interval_s, self._ping_all, what="worker pings", logger=log)

    async def _ping_all(self) -> None:
        for worker in self._live():
            self._spawn(self._ping(worker))

    async def _ping(self, worker: WorkerProcess) -> None:
        timeout_s = self._ping_timeout_s
        try:
            await asyncio.wait_for(worker.control.ping(), timeout_s)
        except TimeoutError:
            log.error(
                "worker %d (pid %d) did not answer a ping in %.1f s; killing it",
                worker.index,
                worker.pid,
                timeout_s,
            )
            worker.kill()
        except ServingError:
            pass  # it died; the pool handles that

    async def watch(self) -> None:
        """Kill a worker whose current run is hung (its runs then fail, and it is replaced);
        runs until cancelled."""
        await every(self._hang.check_s, self._retire_hung, what="hung-run check", logger=log)

    async def _retire_hung(self) -> None:
        hung = dict(self._dispatcher.hung(self._hang, time.monotonic()))
        for worker in self._live():
            message = hung.get(worker.index)
            if message is not None:
                log.error("%s (pid %d); killing it", message, worker.pid)
                worker.retire(Unavailable(message))
