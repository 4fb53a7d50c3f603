"""The supervisor's side of the workers: start, watch, respawn and stop them; host servables.

Each worker is a fresh interpreter (``python -m workers``, never a fork of the gateway) attached to
its own channel (:mod:`gateway.worker_pool.process`). The pool speaks to each over its control link
(:mod:`gateway.worker_pool.control`) and attaches the channel to the run side it is given
(:class:`~gateway.worker_pool.run_router.RunRouter`: a front end's dispatcher, or the
supervisor's fan-out), which makes the run link that requests use. Death is noticed through a pidfd
watched by the loop; a hang through a ping that is not answered within ``ping_timeout_s``, or a run
that computes far longer than its servable's runs do (:mod:`gateway.worker_pool.worker_liveness`).
Either way the worker's pending requests fail with UNAVAILABLE and a new worker is started and given
the same servables (:mod:`gateway.worker_pool.hosting`).

A worker counts as alive only once it has reported ready *and* its exit has not been seen: one
that dies as it reports ready fails its own start with UNAVAILABLE. A replacement that fails to
start (it died, timed out, or could not be spawned) is tried again ``restart_delay_s`` later,
doubling up to :data:`MAX_RESTART_DELAY_S`, until one serves or the pool closes. Every background
task is supervised (:mod:`gateway.tasks`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from gateway.errors import ServingError, Unavailable
from gateway.tasks import Tasks, gather_all
from gateway.worker_channel.warmup_runs import Planner
from gateway.worker_channel.watchdog import HangPolicy
from gateway.worker_pool.control import ControlLink
from gateway.worker_pool.hosting import Hosting, Loaded, LoadSpec
from gateway.worker_pool.process import WorkerProcess
from gateway.worker_pool.run_router import RunRouter
from gateway.worker_pool.worker_liveness import Liveness

log = logging.getLogger(__name__)

MAX_RESTART_DELAY_S = 30.0
"""The longest wait between two tries at starting a worker's replacement."""


@dataclass(frozen=True)
class PoolOptions:
    """How many workers, how much shared memory each, and how hangs are detected.

    ``input_bytes`` / ``output_bytes``: size of each worker's input and output areas (bytes).
    ``ping_interval_s``: seconds between liveness pings. ``ping_timeout_s``: seconds a worker may
    take to answer one before it is killed and replaced. ``hang``: when a run that takes far longer
    than its servable's runs do gets its worker replaced (:mod:`gateway.worker_channel.watchdog`).
    ``start_timeout_s``: seconds a new worker
    may take to report ready. ``stop_timeout_s``: seconds to wait for a clean exit before SIGKILL.
    ``restart_delay_s``: seconds before a replacement that failed to start is tried again (then
    twice that, up to :data:`MAX_RESTART_DELAY_S`).
    ``log_format``: the workers' log format (:data:`channel.logs.FORMATS`).
    """

    workers: int
    input_bytes: int
    output_bytes: int
    ping_interval_s: float = 5.0
    ping_timeout_s: float = 30.0
    hang: HangPolicy = field(default_factory=HangPolicy)
    start_timeout_s: float = 60.0
    stop_timeout_s: float = 5.0
    restart_delay_s: float = 1.0
    log_format: str = "text"
    handover: bool = False
    """Give each worker a socket for channels handed over later (several front ends)."""


class WorkerEvents(Protocol):
    """Who else must know when a worker process comes and goes (the supervisor's front ends)."""

    def started(self, worker: WorkerProcess) -> None:
        """``worker`` is ready, before its servables are restored and routed."""
        ...

    def exited(self, worker: WorkerProcess, code: int) -> None:
        """``worker`` ended with ``code`` and was reaped (not called while the pool closes)."""
        ...


class WorkerPool:
    """Owns the worker processes and their control links; ``dispatcher`` (the run side) routes
    runs over their run links.

    ``on_change`` is called (on the loop) whenever a worker becomes ready or dies.
    """

    def __init__(
        self,
        options: PoolOptions,
        *,
        dispatcher: RunRouter,
        on_change: Callable[[], None] | None = None,
        events: WorkerEvents | None = None,
    ) -> None:
        self.options = options
        self.events = events
        self.dispatcher = dispatcher
        self.restarts = 0
        self._on_change = on_change
        self._hosting = Hosting(self.dispatcher)
        self._workers: list[WorkerProcess | None] = [None] * options.workers
        self._tasks = Tasks(log)
        self._closing = False
        self._changed = asyncio.Condition()

    # -- start / stop -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start every worker and wait until each reports ready; the first that fails (its
        ServingError: it died, or did not report ready in time) stops the others' starts."""
        await gather_all(*(self._start_worker(i) for i in range(self.options.workers)))
        options = self.options
        liveness = Liveness(
            self._live,
            self.dispatcher,
            ping_interval_s=options.ping_interval_s,
            ping_timeout_s=options.ping_timeout_s,
            hang=options.hang,
            tasks=self._tasks,
        )
        self._tasks.spawn(liveness.pings(), "worker pings")
        self._tasks.spawn(liveness.watch(), "hung-run check")

    async def close(self) -> None:
        """Stop workers: ask politely, wait ``stop_timeout_s``, then SIGKILL; release everything."""
        self._closing = True
        await self._tasks.close()
        workers = [w for w in self._workers if w is not None]
        await asyncio.gather(*(w.stop(self.options.stop_timeout_s) for w in workers))
        self._workers = [None] * self.options.workers

    # -- servables ------------------------------------------------------------------------------
    async def load(self, spec: LoadSpec, warmup: Planner | None = None) -> Loaded:
        """Load a servable on its workers, warm it up there, then route to them
        (:meth:`Hosting.load <gateway.worker_pool.hosting.Hosting.load>`)."""
        return await self._hosting.load(spec, warmup, self._workers)

    async def unload(self, key: str) -> None:
        """Unload a servable from every worker (errors from dead workers are ignored)."""
        await self._hosting.unload(key, self._workers)

    def placed(self, key: str) -> tuple[int, ...]:
        """The worker slots a servable is placed on (empty when it is not loaded)."""
        return self._hosting.placed(key)

    def hosts(self, key: str) -> bool:
        """True when at least one live worker has ``key`` routed to it."""
        return any(w.alive and key in w.routed for w in self._live())

    # -- state ----------------------------------------------------------------------------------
    @property
    def links(self) -> list[ControlLink]:
        """The control link of each current worker process, by slot."""
        return [w.control for w in self._workers if w is not None]

    def pids(self) -> list[int]:
        """PIDs of the current worker processes (for tests and diagnostics)."""
        return [w.pid for w in self._workers if w is not None]

    def all_alive(self) -> bool:
        return all(w is not None and w.alive for w in self._workers)

    async def wait_all_alive(self) -> None:
        """Return once every worker slot holds a live worker with all models loaded."""
        async with self._changed:
            await self._changed.wait_for(self.all_alive)

    def _live(self) -> list[WorkerProcess]:
        return [w for w in self._workers if w is not None and w.alive]

    # -- process lifecycle ------------------------------------------------------------------------
    async def _start_worker(self, index: int) -> None:
        """Spawn worker ``index``, wait for its ready report, give it its servables; then it is
        alive. Raises ServingError when it dies, or does not report ready in time, meanwhile (it
        is then killed; its exit starts no replacement: the caller decides)."""
        options = self.options
        worker = WorkerProcess.spawn(
            index,
            input_bytes=options.input_bytes,
            output_bytes=options.output_bytes,
            log_format=options.log_format,
            dispatcher=self.dispatcher,
            on_exit=self._on_exit,
            handover=options.handover,
        )
        self._workers[index] = worker
        try:
            await asyncio.wait_for(asyncio.shield(worker.control.ready), options.start_timeout_s)
            worker.endpoint.open()  # refused when its exit was seen first
            if self.events is not None:
                self.events.started(worker)
            await self._hosting.restore(worker)
            worker.endpoint.check_open()  # it may have died while its servables were loading
        except TimeoutError:
            worker.kill()
            raise Unavailable(f"worker {index} did not become ready in time") from None
        except BaseException:
            worker.kill()
            raise
        worker.started = True
        log.info("worker %d ready (pid %d)", index, worker.pid)
        self.dispatcher.wake()
        await self._notify()

    def _on_exit(self, worker: WorkerProcess) -> None:
        code = worker.reap()
        if self._closing:
            return
        if self.events is not None:
            self.events.exited(worker, code)
        self.restarts += 1
        self._tasks.spawn(self._notify(), "worker change")
        if not worker.started:
            what = "worker %d (pid %d) exited with %s while starting"
            log.warning(what, worker.index, worker.pid, code)
            return  # its start fails, and whoever started it decides what next
        log.warning("worker %d (pid %d) exited with %s; restarting", worker.index, worker.pid, code)
        self._tasks.spawn(self._restart(worker.index), f"restart of worker {worker.index}")

    async def _restart(self, index: int) -> None:
        """Start a replacement for worker ``index`` until one serves (or the pool closes)."""
        delay_s = self.options.restart_delay_s
        while not self._closing:
            try:
                await self._start_worker(index)
                return
            except ServingError as exc:
                what = "worker %d failed to restart (next try in %g s): %s"
                log.error(what, index, delay_s, exc.message)
            except Exception:
                log.exception("worker %d failed to restart (next try in %g s)", index, delay_s)
            await asyncio.sleep(delay_s)
            delay_s = min(2 * delay_s, MAX_RESTART_DELAY_S)

    async def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change()
        async with self._changed:
            self._changed.notify_all()
