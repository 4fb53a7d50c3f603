"""Worker process lifecycle: spawn, load models, watch for death and hangs, respawn, stop.

Each worker is a fresh interpreter (``python -m workers``, never a fork of the gateway) attached to
its own :class:`~channel.shm.channel.Channel`. Death is noticed through a pidfd watched by the loop;
a hang through a ping that is not answered within ``ping_timeout_s``. Either way the worker's
pending requests fail with UNAVAILABLE and a new worker is started and given the same model
versions.

A servable is placed on every worker or on a subset (:mod:`gateway.parallel.placement`), loaded
there, warmed up there (:mod:`gateway.parallel.warmup`), and only then routed to: a worker
takes traffic for a servable once it holds it warm, on a first load and after a respawn alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from channel.messages import LoadReply
from channel.shm.channel import Channel
from gateway.errors import ServingError, Unavailable
from gateway.parallel import placement
from gateway.parallel.dispatcher import Dispatcher, WorkerLink
from gateway.parallel.warmup import Planner, WarmupReport, warm_up
from gateway.parallel.watchdog import HangPolicy, hung_run
from workers.bootstrap import spawn_worker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PoolOptions:
    """How many workers, how much shared memory each, and how hangs are detected.

    ``input_bytes`` / ``output_bytes``: size of each worker's input and output areas (bytes).
    ``ping_interval_s``: seconds between liveness pings. ``ping_timeout_s``: seconds a worker may
    take to answer one before it is killed and replaced. ``hang``: when a run that takes far longer
    than its servable's runs do gets its worker replaced (:mod:`gateway.parallel.watchdog`).
    ``start_timeout_s``: seconds a new worker
    may take to report ready. ``stop_timeout_s``: seconds to wait for a clean exit before SIGKILL.
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
    log_format: str = "text"


@dataclass(frozen=True)
class LoadSpec:
    """What a worker needs to load one servable (replayed on respawn)."""

    key: str
    path: str
    platform: str
    intra_op: int
    inter_op: int
    tags: tuple[str, ...] = ("serve",)
    """SavedModel MetaGraph tags (``--saved_model_tags``); ONNX ignores them."""
    workers: int = 0
    """How many workers host it (``--model_workers``); 0: every worker."""


@dataclass(frozen=True)
class Loaded:
    """A servable's signature (the first worker's ``load`` reply) and its warmup per worker."""

    signature: dict[str, Any]
    warmup: tuple[WarmupReport, ...] = ()


@dataclass(frozen=True)
class _Load:
    spec: LoadSpec
    warmup: Planner | None


class _Worker:
    """A live process and its link; ``exited`` resolves when the process is gone."""

    def __init__(self, link: WorkerLink, process: subprocess.Popen[bytes], pidfd: int) -> None:
        self.link = link
        self.process = process
        self.pidfd = pidfd
        self.held: set[str] = set()
        """Servables loaded in this process, warm or still warming (``link.loaded``: routed)."""
        self.exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()


class WorkerPool:
    """Owns the worker processes; the :class:`Dispatcher` routes runs over their links.

    ``on_change`` is called (on the loop) whenever a worker becomes ready or dies.
    """

    def __init__(
        self, options: PoolOptions, *, on_change: Callable[[], None] | None = None
    ) -> None:
        self.options = options
        self.dispatcher = Dispatcher()
        self.restarts = 0
        self._on_change = on_change
        self._loads: dict[str, _Load] = {}
        self._placed: dict[str, tuple[int, ...]] = {}
        self._workers: list[_Worker | None] = [None] * options.workers
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False
        self._changed = asyncio.Condition()

    # -- start / stop -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start every worker and wait until each reports ready."""
        await asyncio.gather(*(self._start_worker(i) for i in range(self.options.workers)))
        self._spawn_task(self._ping_loop())
        self._spawn_task(self._watch_loop())

    async def close(self) -> None:
        """Stop workers: ask politely, wait ``stop_timeout_s``, then SIGKILL; release everything."""
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        workers = [w for w in self._workers if w is not None]
        for w in workers:
            if w.link.alive:
                with contextlib.suppress(ServingError):
                    w.link.stop().add_done_callback(_ignore)
            else:
                _kill(w.process)
        for w in workers:
            try:
                await asyncio.wait_for(asyncio.shield(w.exited), self.options.stop_timeout_s)
            except TimeoutError:
                log.warning(
                    "worker %d (pid %d) did not stop; killing it", w.link.index, w.process.pid
                )
                _kill(w.process)
                await w.exited
        self._workers = [None] * self.options.workers

    # -- models ---------------------------------------------------------------------------------
    async def load(self, spec: LoadSpec, warmup: Planner | None = None) -> Loaded:
        """Load a servable on its workers, replay its warmup on each, then route to them.

        ``warmup`` turns the signature into the runs to replay (None: none). The servable is
        remembered with its placement and replayed, warmup included, on workers respawned later.
        On any failure it is unloaded from every worker and the error raised.
        """
        slots = placement.choose(
            spec.workers,
            placement.hosted_counts(self._placed.values(), len(self._workers)),
            [w is not None and w.link.alive for w in self._workers],
        )
        workers = [w for i in slots if (w := self._workers[i]) is not None and w.link.alive]
        if not workers:
            raise Unavailable("no worker is running")
        self._placed[spec.key] = slots
        try:
            replies = await asyncio.gather(*(self._load_on(w, spec) for w in workers))
            signature = replies[0]["signature"]
            runs = await warmup(signature) if warmup is not None else ()
            reports = await asyncio.gather(
                *(warm_up(w.link, spec.key, runs, self.dispatcher) for w in workers)
            )
        except BaseException:
            await self.unload(spec.key)
            raise
        for w in workers:
            w.link.loaded.add(spec.key)
        self._loads[spec.key] = _Load(spec, warmup)
        self.dispatcher.wake()
        return Loaded(signature, tuple(reports))

    async def unload(self, key: str) -> None:
        """Unload a servable from every worker (errors from dead workers are ignored)."""
        self._loads.pop(key, None)
        self._placed.pop(key, None)
        for w in self._workers:
            if w is None or key not in w.held:
                continue
            w.held.discard(key)
            w.link.loaded.discard(key)
            with contextlib.suppress(ServingError):
                await w.link.unload(key)

    def placed(self, key: str) -> tuple[int, ...]:
        """The worker slots a servable is placed on (empty when it is not loaded)."""
        return self._placed.get(key, ())

    async def _load_on(self, worker: _Worker, spec: LoadSpec) -> LoadReply:
        worker.held.add(spec.key)
        return await worker.link.load(
            key=spec.key,
            path=spec.path,
            platform=spec.platform,
            intra_op=spec.intra_op,
            inter_op=spec.inter_op,
            tags=spec.tags,
        )

    async def _reload_on(self, worker: _Worker, load: _Load) -> None:
        """Give a respawned worker a servable placed on its slot: load, warm up, route."""
        reply = await self._load_on(worker, load.spec)
        if load.warmup is not None:
            key = load.spec.key
            try:
                runs = await load.warmup(reply["signature"])
                await warm_up(worker.link, key, runs, self.dispatcher)
            except ServingError as exc:
                log.error(
                    "warmup of %s on respawned worker %d failed (serving it cold): %s",
                    key,
                    worker.link.index,
                    exc.message,
                )
        worker.link.loaded.add(load.spec.key)

    # -- process lifecycle ------------------------------------------------------------------------
    async def _start_worker(self, index: int) -> None:
        loop = asyncio.get_running_loop()
        channel = Channel.create(
            index=index,
            input_bytes=self.options.input_bytes,
            output_bytes=self.options.output_bytes,
        )
        link = WorkerLink(
            index,
            channel,
            loop,
            on_run_done=self.dispatcher.wake,
            run_times=self.dispatcher.run_times,
        )
        try:
            process = spawn_worker(channel, log_format=self.options.log_format)
        except BaseException:
            link.close(Unavailable("worker failed to start"))
            raise
        pidfd = os.pidfd_open(process.pid)
        worker = _Worker(link, process, pidfd)
        link.pid = process.pid
        loop.add_reader(pidfd, self._on_exit, worker)
        self._workers[index] = worker
        self.dispatcher.add_link(link)
        try:
            await asyncio.wait_for(asyncio.shield(link.ready), self.options.start_timeout_s)
            link.alive = True
            for load in list(self._loads.values()):
                if index in self._placed.get(load.spec.key, ()):
                    await self._reload_on(worker, load)
        except TimeoutError:
            _kill(process)
            raise Unavailable(f"worker {index} did not become ready in time") from None
        except BaseException:
            _kill(process)
            raise
        log.info("worker %d ready (pid %d)", index, process.pid)
        self.dispatcher.wake()
        await self._notify()

    def _on_exit(self, worker: _Worker) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(worker.pidfd)
        os.close(worker.pidfd)
        code = worker.process.wait()
        worker.link.close(Unavailable(f"worker {worker.link.index} exited (code {code})"))
        if not worker.exited.done():
            worker.exited.set_result(None)
        if self._closing:
            return
        log.warning(
            "worker %d (pid %d) exited with %s; restarting",
            worker.link.index,
            worker.process.pid,
            code,
        )
        self.restarts += 1
        self._spawn_task(self._notify())
        self._spawn_task(self._restart(worker.link.index))

    async def wait_all_alive(self) -> None:
        """Return once every worker slot holds a live worker with all models loaded."""
        async with self._changed:
            await self._changed.wait_for(self.all_alive)

    def all_alive(self) -> bool:
        return all(w is not None and w.link.alive for w in self._workers)

    def hosts(self, key: str) -> bool:
        """True when at least one live worker has ``key`` loaded."""
        return any(link.alive and key in link.loaded for link in self.dispatcher.links)

    async def _notify(self) -> None:
        if self._on_change is not None:
            self._on_change()
        async with self._changed:
            self._changed.notify_all()

    async def _restart(self, index: int) -> None:
        try:
            await self._start_worker(index)
        except ServingError as exc:
            log.error("worker %d failed to restart: %s", index, exc.message)

    async def _ping_loop(self) -> None:
        while True:
            await asyncio.sleep(self.options.ping_interval_s)
            for w in list(self._workers):
                if w is not None and w.link.alive:
                    self._spawn_task(self._ping(w))

    async def _ping(self, worker: _Worker) -> None:
        try:
            await asyncio.wait_for(worker.link.ping(), self.options.ping_timeout_s)
        except TimeoutError:
            log.error(
                "worker %d (pid %d) did not answer a ping in %.1f s; killing it",
                worker.link.index,
                worker.process.pid,
                self.options.ping_timeout_s,
            )
            _kill(worker.process)
        except ServingError:
            pass  # it died; _on_exit handles that

    async def _watch_loop(self) -> None:
        """Kill a worker whose current run is hung (its runs then fail, and it is replaced)."""
        policy = self.options.hang
        while True:
            await asyncio.sleep(policy.check_s)
            now = time.monotonic()
            for w in list(self._workers):
                run = w.link.oldest_run() if w is not None and w.link.alive else None
                if w is None or run is None:
                    continue
                key, rows, since = run
                limit = hung_run(policy, self.dispatcher.run_times, key, rows, now - since)
                if limit is not None:
                    message = (
                        f"worker {w.link.index} stopped answering: a run of {key} ({rows} rows) "
                        f"computed for over {limit:.1f} s"
                    )
                    log.error("%s (pid %d); killing it", message, w.process.pid)
                    w.link.close(Unavailable(message))
                    _kill(w.process)

    def _spawn_task(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def pids(self) -> list[int]:
        """PIDs of the current worker processes (for tests and diagnostics)."""
        return [w.process.pid for w in self._workers if w is not None]


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGKILL)


def _ignore(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
