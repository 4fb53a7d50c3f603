"""Noticing a worker that is alive but stuck, and killing it (its exit is then handled as a death).

Two signs, each checked periodically over the live workers: a ping over the control link not
answered within ``ping_timeout_s`` (every ``ping_interval_s``; :mod:`gateway.pings`, one ping
outstanding per worker), and a run that has computed far longer than its servable's runs do
(every ``hang.check_s``; the decision is the run side's, :meth:`RunRouter.hung
<gateway.worker_pool.run_router.RunRouter.hung>`, from :mod:`gateway.worker_channel.watchdog`). A
hung run's worker is retired first, so its requests fail with the message that says why, then
killed. Both loops are supervised (:func:`gateway.tasks.every`): a check that fails is logged and
runs again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from gateway.errors import Unavailable
from gateway.pings import Pinger
from gateway.tasks import Tasks, every
from gateway.worker_channel.watchdog import HangPolicy
from gateway.worker_pool.process import WorkerProcess
from gateway.worker_pool.run_router import RunRouter

log = logging.getLogger(__name__)


class Liveness:
    """Watches the workers ``live()`` returns (seconds as in
    :class:`~gateway.worker_pool.pool.PoolOptions`); each ping runs in a task of ``tasks`` (the
    pool's), so that one slow worker never delays the others' pings."""

    def __init__(
        self,
        live: Callable[[], list[WorkerProcess]],
        dispatcher: RunRouter,
        *,
        ping_interval_s: float,
        ping_timeout_s: float,
        hang: HangPolicy,
        tasks: Tasks,
    ) -> None:
        self._live = live
        self._dispatcher = dispatcher
        self._hang = hang
        self._pinger = Pinger(
            live,
            ping=lambda worker: worker.control.ping(),
            kill=lambda worker: worker.kill(),
            name=lambda worker: f"worker {worker.index} (pid {worker.pid})",
            interval_s=ping_interval_s,
            timeout_s=ping_timeout_s,
            tasks=tasks,
            what="worker pings",
        )

    async def pings(self) -> None:
        """Ping every live worker each ``ping_interval_s`` (:class:`~gateway.pings.Pinger`: one
        ping outstanding each); runs until cancelled."""
        await self._pinger.run()

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
