"""One front-end process of several (``tensorgate --frontends N``): its lifecycle and messages.

A front end owns only its connections and what serves them: its own uvloop, grpc.aio and REST
servers on the shared ports (``SO_REUSEPORT``), batch queues, request core, and a channel of its
own to each worker. Everything single is the supervisor's (:mod:`gateway.supervisor`), reached
over one :class:`~gateway.ipc.link.MessageLink`. Its life, in order:

1. ``hello`` to the supervisor; the answer comes after the worker channels, routes and the
   registry snapshot, so a front end that has it knows everything (:class:`RunSide`,
   :class:`SnapshotModels`).
2. ``serve`` (ports): bind and listen, answer with the bound ports; watch for hung runs.
3. ``stop`` (the supervisor's SIGTERM) or its own SIGTERM: the one-process drain
   (:meth:`gateway.protocol_servers.Servers.stop`: NOT_SERVING, new calls refused, running ones
   finish; ``hurry`` or a second signal skips the wait; the last refusals answered once every front
   end has begun its shutdown: ``shutting_down``), then exit 0. SIGINT is ignored: a terminal's
   Ctrl-C reaches the whole process group, and the supervisor decides.

The supervisor's requests: ``ping`` (liveness: answered at once, from the loop), ``snapshot`` (a
new registry; acknowledged once in force), ``drain`` (a servable about to be unloaded: its queues
run dry first), ``figures`` (this front end's metrics, :mod:`gateway.ipc.figures`). A scrape of
the metrics page asks the supervisor for the whole server's page (``scrape``);
HandleReloadConfigRequest and V2's repository load/unload go to it as ``apply``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Mapping
from typing import Any

from channel.handover import Message, close_all
from gateway.config.settings import Settings
from gateway.drain import Signals
from gateway.errors import ServingError
from gateway.frontend.pushed_registry import ForwardedRepository, SnapshotModels
from gateway.frontend.run_side import RunSide
from gateway.ipc import figures, snapshot
from gateway.ipc.link import MessageLink
from gateway.lifecycle import settle_heap
from gateway.observability.hooks import Observability
from gateway.observability.metrics_page import CONTENT_TYPE
from gateway.observability.workers import ShmUse
from gateway.protocol_servers import Servers
from gateway.roles import Options, build_front_end
from gateway.runs.shared_load import LoadTable, SharedLoadDispatcher
from gateway.serving.registry import available_servables
from gateway.tasks import Tasks
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.routes import ExtraRoute

log = logging.getLogger(__name__)


class FrontEnd:
    """Front end ``slot`` (start number ``serial``) on ``control`` (its socket to the
    supervisor) and the shared load ``table``."""

    def __init__(
        self,
        settings: Settings,
        *,
        slot: int,
        serial: int,
        control: socket.socket,
        table: LoadTable,
    ) -> None:
        self.settings = settings
        self.slot = slot
        self.serial = serial
        options = Options.from_settings(settings, [])
        self.observability = Observability.from_settings(settings)
        self.dispatcher = SharedLoadDispatcher(table, slot)
        self.link = MessageLink(control, self._handle, name="supervisor", on_close=self._orphaned)
        self.models = SnapshotModels(self.dispatcher, self.link)
        parts = build_front_end(
            options,
            self.models,
            self.dispatcher,
            observer=self.observability.queue_observer,
            on_placed=self.observability.placement_reporter(),
            on_demote=self._demote,
        )
        self.queues, self.core, self.inline = parts.queues, parts.core, parts.inline
        self.servers = Servers(
            settings,
            self.core,
            self.queues,
            self.observability,
            pages=self._pages,
            reuse_port=True,
            unix_socket=slot == 0,
            repository=ForwardedRepository(self.models, self.link),
        )
        self.run_side = RunSide(self.dispatcher, self._changed)
        self.signals = Signals()
        self._hang = options.pool.hang
        self._health_due = False
        self._closing = False
        self._tasks = Tasks(log)

    async def serve(self) -> None:
        """Say hello, serve when told, drain and stop on ``stop`` or SIGTERM."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.signals.received)
        loop.add_signal_handler(signal.SIGINT, lambda: None)
        try:
            await self.link.call("hello", pid=os.getpid())
            await self.signals.stop.wait()
        except ServingError as exc:  # the supervisor is gone before we served
            log.error("front end %d: %s", self.slot, exc.message)
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Drain, stop the servers, release the channels and the link. Safe to call twice."""
        await self.servers.stop(self.signals, together=self._others_shutting_down)
        await self._tasks.close()
        self.inline.close()
        self.run_side.close()
        self._closing = True
        self.link.close()
        await self.observability.close(self.settings.shutdown_grace_seconds, self.signals.hurry)
        log.info("front end %d stopped", self.slot)

    async def _others_shutting_down(self) -> None:
        """Our shutdown has begun: wait until every front end's has (the supervisor's
        :mod:`~gateway.supervisor.stop_barrier`), or the supervisor is gone."""
        with contextlib.suppress(ServingError):
            await self.link.call("shutting_down")

    # -- the supervisor's messages ----------------------------------------------------------------
    def _handle(self, message: Message, fds: list[int]) -> Awaitable[Mapping[str, Any]] | None:
        op = message.get("op")
        if op == "worker":
            self.run_side.worker(message["index"], message["pid"], message["routed"], fds)
            return None
        close_all(fds)
        if op == "route":
            self.run_side.route(message["index"], message["key"])
        elif op == "unroute":
            self.run_side.unroute(message["index"], message["key"])
        elif op == "worker_gone":
            self.run_side.gone(message["index"], message["pid"], message["message"])
        elif op == "snapshot":
            self.models.replace(snapshot.snapshot_from_wire(message["snapshot"]))
            self.observability.models_changed(self.models)
            self._changed()
            return _answer({})
        elif op == "drain":
            return self._drain(message["key"])
        elif op == "ping":
            return _answer({})
        elif op == "demotions":
            self.inline.merge({k: (int(c), float(u)) for k, (c, u) in message["records"].items()})
        elif op == "figures":
            return _answer({"figures": self._figures()})
        elif op == "serve":
            return self._start_servers(message["grpc_port"], message["rest_port"])
        elif op == "stop":
            if not self.signals.stop.is_set():
                self.signals.received()
        elif op == "hurry":
            while not self.signals.hurry.is_set():
                self.signals.received()
        else:
            log.warning("front end %d: unknown message %r", self.slot, op)
        return None

    async def _start_servers(self, grpc_port: int, rest_port: int) -> Mapping[str, Any]:
        await self.inline.loaded()  # light versions measured: the first calls go where they stay
        await self.servers.update_health(self.models)
        await self.servers.start(grpc_port, rest_port)
        self._tasks.spawn(self.run_side.watch_hangs(self._hang, self._retire), "hung-run check")
        settle_heap()
        return {"grpc_port": self.servers.grpc_port, "rest_port": self.servers.rest_port}

    async def _drain(self, key: str) -> Mapping[str, Any]:
        await self.queues.drain_key(key)
        return {}

    def _figures(self) -> dict[str, Any]:
        shm: ShmUse = {}
        for link in self.dispatcher.links:
            if link.alive:
                channel, worker = link.channel, str(link.index)
                shm[(worker, "input")] = (channel.input_used, channel.input_capacity)
                shm[(worker, "output")] = (channel.output_used, channel.output_capacity)
        obs = self.observability
        return figures.dump(obs.tfs, obs.metrics, shm)

    def _demote(self, key: str, count: int, until: float) -> None:
        """A version stalled here: the supervisor keeps it out of every front end."""
        self.link.notify("demote", key=key, count=count, until=until)

    def _retire(self, index: int, pid: int, message: str) -> None:
        self.link.notify("retire", index=index, pid=pid, message=message)

    def _orphaned(self, error: ServingError) -> None:
        """The supervisor's link closed: it is gone (this process dies with it) or we stop."""
        if not self._closing:
            log.warning("front end %d: %s; stopping", self.slot, error.message)
            while not self.signals.hurry.is_set():
                self.signals.received()

    # -- health and pages -------------------------------------------------------------------------
    def _changed(self) -> None:
        """What is routable changed: run the new versions here if light, update health once,
        at the end of this loop turn."""
        self.inline.sync(available_servables(self.models))
        if not self._health_due:
            self._health_due = True
            self._tasks.spawn(self._update_health(), "health update")

    async def _update_health(self) -> None:
        self._health_due = False
        if not self.signals.stop.is_set():
            await self.servers.update_health(self.models)

    def _pages(self) -> dict[str, ExtraRoute]:
        path = self.observability.page_path
        return {} if path is None else {path: self._scrape}

    async def _scrape(self, request: HttpRequest) -> HttpResponse:
        answer = await self.link.call("scrape")
        return HttpResponse(200, str(answer["page"]).encode(), CONTENT_TYPE)


async def _answer(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    return fields
