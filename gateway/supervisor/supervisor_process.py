"""The supervisor of several front ends (``tensorgate --frontends N``): lifecycle and requests.

It owns what must be single and supervises the rest (spawn, watch, restart, signal):

start: hold the ports (:mod:`~gateway.supervisor.ports`) → spawn N front ends (they start up while
the workers do) → workers → models loaded and warmed up → every front end joined (channels,
routes, registry) and told to ``serve`` on the held ports → readiness reported (``--ready_fd``:
pid, ports and the front ends' pids) → file-system and config polling.

While serving: every front end is pinged; one that does not answer in time is killed and replaced
(:mod:`~gateway.supervisor.frontend_liveness`: the bound on every wait for a front end). A front
end's ``apply`` (HandleReloadConfigRequest, V2 load/unload) is carried out here, once, and answered
when every front end serves from the new registry; ``scrape`` answers the whole server's metrics
page (:mod:`~gateway.supervisor.fleet_page`); ``retire`` kills a worker a front end found hung. A
front end that dies is replaced (only its own calls failed); a worker that dies is replaced by the
pool and every front end gets a channel to the new one.

stop (SIGTERM/SIGINT only set events): every front end drains as one process does (``stop``;
a second signal sends ``hurry``), answering its last refusals only once all have begun their
shutdown (:mod:`~gateway.supervisor.stop_barrier`), and exits → polling stops → workers stop →
the load table and the ports are released. If the supervisor itself dies, the kernel kills every
front end and worker (``PR_SET_PDEATHSIG``), and shared memory is anonymous: nothing is left
behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from channel.handover import Message, close_all
from gateway.config.model_config import ModelSpecConfig
from gateway.config.settings import Settings
from gateway.config.settings_field import port_to_bind
from gateway.drain import Signals
from gateway.errors import ServingError, Unavailable
from gateway.ipc.link import MessageHandler
from gateway.ipc.snapshot import spec_from_wire
from gateway.lifecycle import report_ready, serve
from gateway.listen import TlsMaterial
from gateway.models.config_poll import start_polls
from gateway.observability.hooks import Observability
from gateway.roles import Options, build_supervisor
from gateway.runs.inline_cost import Placement
from gateway.runs.shared_load import LoadTable
from gateway.serving.registry import Servable
from gateway.supervisor.fanout import Fanout
from gateway.supervisor.fleet_page import FleetPage
from gateway.supervisor.frontend_liveness import front_end_pings
from gateway.supervisor.frontends import FrontEndProcess
from gateway.supervisor.ports import Reservation, reserve
from gateway.supervisor.registry_push import RegistryPush
from gateway.supervisor.stop_barrier import StopBarrier
from gateway.tasks import Tasks
from gateway.tfserving.warmup import WarmupPlanner
from gateway.transport.auth import load_roles
from gateway.v2.model_control import ModelRepository
from gateway.v2.repository_codec import RepositoryCall

log = logging.getLogger(__name__)

STOP_MARGIN_S = 10.0
"""Beyond twice ``--shutdown_grace_seconds`` (its drain, then its request log's flush), how long a
draining front end may take to exit."""
RESPAWN_BACKOFF_S = (0.0, 0.5, 1.0, 2.0, 5.0)
"""Delay before replacing a front end that died, by how many died in a row before serving."""


class Supervisor:
    """``frontends`` front ends over one worker pool, started with the command line ``flags``."""

    def __init__(
        self,
        settings: Settings,
        specs: Sequence[ModelSpecConfig],
        *,
        frontends: int,
        flags: Sequence[str],
    ) -> None:
        self.settings = settings
        self.specs = list(specs)
        self.frontends = frontends
        self.flags = [f for f in flags if not f.startswith("--ready_fd")]
        if settings.ssl_config_file:  # each front end loads them: refuse bad ones here, once
            TlsMaterial.load(settings.ssl_config_file)
        load_roles(settings)
        options = Options.from_settings(settings, self.specs)
        self.workers = options.pool.workers
        self._table_fd = LoadTable.create_memfd(frontends, self.workers)
        self.table = LoadTable(self._table_fd, frontends, self.workers)
        self.fanout = Fanout(
            input_bytes=options.pool.input_bytes,
            output_bytes=options.pool.output_bytes,
            table=self.table,
        )
        self.observability = Observability.from_settings(settings, env={})  # warmups: no spans
        parts = build_supervisor(
            options,
            self.specs,
            dispatcher=self.fanout,
            events=self.fanout,
            before_unload=self._before_unload,
            on_change=self._changed,
            warmup=WarmupPlanner.from_settings(settings, options.batching),
        )
        self.pool, self.models = parts.pool, parts.models
        self.push = RegistryPush(self.models, self.fanout.front_ends)
        self.placement = Placement()
        """The versions a front end saw stall (:mod:`gateway.runs.inline_cost`): kept here so
        that every front end, a restarted one too, keeps them on the workers for their backoff."""
        self.repository = ModelRepository(
            self.models, management=settings.enable_model_management_api
        )
        self.page = FleetPage(
            self.fanout.front_ends,
            self.pool,
            self.observability.tfs,
            models=self.models,
            restarts=lambda: self.restarts,
            cache=self.models.cache_figures,
        )
        self.signals = Signals()
        self.restarts = 0
        """Front ends replaced after dying."""
        self.grpc_port = 0
        self.rest_port = 0
        self._slots: list[FrontEndProcess | None] = [None] * frontends
        self._early_deaths = [0] * frontends
        self._serials = itertools.count(1)
        self._ports: list[Reservation] = []
        self.started = False
        """True once :meth:`start` has completed (every front end serves)."""
        self._stopping = False
        self._ready_fd = settings.ready_fd
        self._tasks = Tasks(log)
        self.barrier = StopBarrier()
        self.pings = front_end_pings(
            lambda: [] if self._stopping else self.fanout.front_ends.values(),
            interval_s=settings.frontend_ping_interval_seconds,
            timeout_s=settings.frontend_ping_timeout_seconds,
            tasks=self._tasks,
        )

    # -- lifecycle --------------------------------------------------------------------------------
    async def serve(self) -> None:
        """Run until SIGTERM/SIGINT, then drain every front end and shut down in order
        (:func:`gateway.lifecycle.serve`)."""
        await serve(self)

    async def start(self) -> None:
        settings = self.settings
        grpc = reserve("gRPC", settings.grpc_bind_address, settings.port, dual_stack=True)
        self._ports.append(grpc)
        self.grpc_port = grpc.port
        if settings.rest_api_port:
            rest = reserve(
                "REST",
                settings.rest_api_bind_address,
                port_to_bind(settings.rest_api_port),
                dual_stack=False,
            )
            self._ports.append(rest)
            self.rest_port = rest.port
        for slot in range(self.frontends):
            self._spawn_front_end(slot)
        await self.pool.start()
        await self.models.apply(self.specs)  # TF Serving's checks (labels) apply at start too
        await asyncio.gather(*(self._serve_slot(slot) for slot in range(self.frontends)))
        self.started = True
        log.info(
            "%d front ends serving gRPC on port %d%s", self.frontends, self.grpc_port,
            f" and REST on port {self.rest_port}" if self.rest_port else "",
        )  # fmt: skip
        self._tasks.spawn(self.pings.run(), "front-end pings")
        start_polls(settings, self.models, self._tasks)
        self._report_ready()

    async def stop(self) -> None:
        """Drain and stop every front end, then the workers; release everything. Idempotent."""
        self._stopping = True
        fronts = [f for f in self._slots if f is not None and f.alive]
        self.barrier.expect(fronts)
        for front in fronts:
            front.link.notify("stop")
        hurry = asyncio.ensure_future(self._forward_hurry(fronts))
        grace_s = 2 * self.settings.shutdown_grace_seconds + STOP_MARGIN_S
        await asyncio.gather(*(f.stop(grace_s) for f in fronts))
        hurry.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await hurry
        await self._tasks.close()
        await self.models.close()
        await self.pool.close()
        self.fanout.close()
        self.table.close()
        if self._table_fd >= 0:
            os.close(self._table_fd)
            self._table_fd = -1
        for reservation in self._ports:
            reservation.close()
        self._ports.clear()
        log.info("tensorgate stopped")

    async def _forward_hurry(self, fronts: list[FrontEndProcess]) -> None:
        await self.signals.hurry.wait()
        for front in fronts:
            front.link.notify("hurry")

    # -- front ends -------------------------------------------------------------------------------
    def _spawn_front_end(self, slot: int) -> FrontEndProcess:
        front = FrontEndProcess.spawn(
            slot,
            next(self._serials),
            flags=self.flags,
            load_table_fd=self._table_fd,
            frontends=self.frontends,
            workers=self.workers,
            handler=self._handler,
            on_exit=self._front_end_exited,
        )
        self._slots[slot] = front
        return front

    async def _serve_slot(self, slot: int) -> None:
        """Wait until the front end in ``slot`` joined, then have it serve (at start)."""
        while True:
            front = self._slots[slot]
            if front is None or not front.alive:
                raise Unavailable(f"front end {slot} exited before it served")
            if front.joined.done():
                await self._serve(front)
                return
            either: set[asyncio.Future[Any]] = {front.exited, front.joined}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)

    async def _serve(self, front: FrontEndProcess) -> None:
        """Have ``front`` listen on the held ports; ServingError when it cannot."""
        answer = await front.link.call("serve", grpc_port=self.grpc_port, rest_port=self.rest_port)
        front.serving = True
        self._early_deaths[front.slot] = 0
        log.info(
            "front end %d (pid %d) serving on ports %s", front.slot, front.pid,
            f"{answer['grpc_port']}/{answer['rest_port']}",
        )  # fmt: skip

    def _front_end_exited(self, front: FrontEndProcess) -> None:
        self.barrier.check()
        self.fanout.leave(front)
        self.page.departed(front)
        if self._slots[front.slot] is front:
            self._slots[front.slot] = None
        if self._stopping:
            return
        code = front.exited.result()
        log.warning("front end %d (pid %d) exited with %s; restarting", front.slot, front.pid, code)
        self.restarts += 1
        if not front.serving:
            self._early_deaths[front.slot] += 1
        if self.started:
            self._tasks.spawn(self._replace(front.slot), f"replacement of front end {front.slot}")

    async def _replace(self, slot: int) -> None:
        deaths = self._early_deaths[slot]
        await asyncio.sleep(RESPAWN_BACKOFF_S[min(deaths, len(RESPAWN_BACKOFF_S) - 1)])
        if not self._stopping:
            self._spawn_front_end(slot)

    # -- their requests ---------------------------------------------------------------------------
    def _handler(self, front: FrontEndProcess) -> MessageHandler:
        def handle(message: Message, fds: list[int]) -> Awaitable[Mapping[str, Any]] | None:
            close_all(fds)
            op = message.get("op")
            if op == "hello":
                return self._hello(front)
            if op == "apply":
                return self._apply([spec_from_wire(s) for s in message["specs"]])
            if op == "scrape":
                return self._scrape()
            if op == "shutting_down":
                return self._shutting_down(front)
            if op == "v2_repository":
                call = RepositoryCall(str(message["model"]), bool(message["unload_dependents"]))
                return self._repository_call(str(message["action"]), call)
            if op == "retire":
                self.fanout.retire(message["index"], message["pid"], str(message["message"]))
            elif op == "demote":
                self._demoted(front, str(message["key"]), int(message["count"]), message["until"])
            else:
                log.warning("front end %d sent an unknown message %r", front.slot, op)
            return None

        return handle

    def _demoted(self, source: FrontEndProcess, key: str, count: int, until: float) -> None:
        """Front end ``source`` saw ``key`` stall: every other front end moves it out too."""
        self.placement.merge(key, count, float(until))
        for front in self.fanout.front_ends.values():
            if front is not source and front.joined.done():
                front.link.notify("demotions", records=self.placement.as_wire())

    async def _hello(self, front: FrontEndProcess) -> Mapping[str, Any]:
        """Channels to every worker with their routes, the demotions, then the registry;
        answered once the front end serves from it. After start, it is then told to serve."""
        self.fanout.join(front)
        front.link.notify("demotions", records=self.placement.as_wire())
        await self.push.send(front)
        if not front.joined.done():
            front.joined.set_result(None)
        if self.started and not self._stopping:
            self._tasks.spawn(self._serve_replacement(front), "replacement serving")
        return {}

    async def _serve_replacement(self, front: FrontEndProcess) -> None:
        try:
            await self._serve(front)
        except ServingError as exc:
            log.error("front end %d could not serve (replacing it): %s", front.slot, exc.message)
            front.kill()

    async def _apply(self, specs: list[ModelSpecConfig]) -> Mapping[str, Any]:
        """A front end's reload, answered once every front end has the registry it left (also
        when it failed: a config taken before a load failed is in force)."""
        try:
            await self.models.apply(specs)
        finally:
            await self.push.sync()
        return {}

    async def _repository_call(self, action: str, call: RepositoryCall) -> Mapping[str, Any]:
        """V2's repository load or unload, carried out here (one memory of what V2 unloaded),
        answered as :meth:`_apply`."""
        try:
            await (
                self.repository.unload(call) if action == "unload" else self.repository.load(call)
            )
        finally:
            await self.push.sync()
        return {}

    async def _shutting_down(self, front: FrontEndProcess) -> Mapping[str, Any]:
        await self.barrier.arrive(front)
        return {}

    async def _scrape(self) -> Mapping[str, Any]:
        return {"page": (await self.page.render()).decode()}

    # -- the model lifecycle's hooks --------------------------------------------------------------
    def _changed(self) -> None:
        self.observability.record_warmups(self.models)
        self.push.changed()

    async def _before_unload(self, servable: Servable) -> None:
        await self.push.drain(servable)

    def _report_ready(self) -> None:
        fd, self._ready_fd = self._ready_fd, -1
        if fd >= 0:
            pids = [f.pid for f in self._slots if f is not None]
            info = {
                "pid": os.getpid(),
                "grpc_port": self.grpc_port,
                "rest_port": self.rest_port,
                "frontends": pids,
            }
            report_ready(fd, info)

    def report_not_ready(self) -> None:
        """The start failed or was abandoned: close ``--ready_fd`` without a line."""
        fd, self._ready_fd = self._ready_fd, -1
        if fd >= 0:
            os.close(fd)
