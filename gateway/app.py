"""The gateway's lifecycle, as explicit ordered steps.

start: workers → models loaded → gRPC server bound (TCP and optional Unix socket, TLS with
--ssl_config_file; every call behind the :class:`~gateway.transport.gate.Gate`; TF Serving's
services and the Open Inference Protocol's on one port) → REST (``/v1`` and ``/v2``) → health
SERVING → readiness reported. stop (SIGTERM/SIGINT only set events, :mod:`gateway.drain`): health
NOT_SERVING and open batches sent → new calls refused with UNAVAILABLE while running ones finish
(``--shutdown_grace_seconds``; a second signal skips the wait) → servers stop → polling stops →
workers stop (SIGKILL after a timeout) → every channel and shared-memory region released.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import select
import time
from collections.abc import Mapping, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from gateway.config.model_config import ModelSpecConfig
from gateway.config.settings import Settings
from gateway.drain import Signals, Surface, drain
from gateway.errors import Unavailable
from gateway.listen import TlsMaterial, UnixSocket, bind_grpc
from gateway.models.config_poll import poll_config_file
from gateway.observability.hooks import Observability
from gateway.parallel.supervised import Tasks, every
from gateway.roles import Options, build
from gateway.tfserving.surface import TfServingOptions, TfServingSurface
from gateway.tfserving.warmup import WarmupPlanner
from gateway.transport.auth import load_tokens
from gateway.transport.gate import Gate
from gateway.transport.http.connections import rest_limits
from gateway.transport.http.front import Front
from gateway.transport.http.routes import Routes
from gateway.transport.http.server import HttpServer
from gateway.transport.surface import GrpcService, ProtocolSurface, service_names
from gateway.v2.surface import V2Surface
from gateway.v2.surface import options_from as v2_options

log = logging.getLogger(__name__)

HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name


def grpc_options(settings: Settings) -> list[tuple[str, Any]]:
    """Server channel options: message and connection limits, no silent port sharing, user
    overrides (--grpc_channel_arguments) last."""
    return [
        ("grpc.so_reuseport", 0),
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.max_allowed_incoming_connections", settings.grpc_max_connections),
        ("grpc.max_connection_idle_ms", int(settings.grpc_idle_timeout_seconds * 1000)),
        ("grpc.server_handshake_timeout_ms", int(settings.rest_api_header_timeout_seconds * 1000)),
        *_pending_limits(settings.grpc_max_pending_requests),
        *settings.grpc_channel_options,
    ]


def _pending_limits(soft: int) -> list[tuple[str, int]]:
    """grpc's random early refusal of calls waiting in its core: from ``soft`` waiting calls on,
    always at twice that (none: grpc's defaults)."""
    if not soft:
        return []
    return [
        ("grpc.server.max_pending_requests", soft),
        ("grpc.server.max_pending_requests_hard_limit", 2 * soft),
    ]


FINAL_GRACE_S = 0.5
"""After the drain, how long calls that are just being refused may take to get their answer."""


class Gateway:
    """One gateway process: worker pool, model manager, core and the gRPC server."""

    def __init__(
        self,
        settings: Settings,
        specs: Sequence[ModelSpecConfig],
        observability: Observability | None = None,
    ) -> None:
        """``observability``: metrics and tracing (default: as the settings and ``OTEL_*`` ask)."""
        self.settings = settings
        self.specs = list(specs)
        options = Options.from_settings(settings, self.specs)
        self.observability = observability or Observability.from_settings(settings)
        stack = build(
            options,
            self.specs,
            on_change=self._models_changed,
            observer=self.observability.queue_observer,
            warmup=WarmupPlanner.from_settings(settings, options.batching),
        )
        self.pool = stack.pool
        self.models = stack.models
        self.queues = stack.queues
        self.core = stack.core
        self.health = health.aio.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.rest: HttpServer | None = None
        self.grpc_port = 0
        self.rest_port = 0
        self.tls = TlsMaterial.load(settings.ssl_config_file) if settings.ssl_config_file else None
        self.auth = load_tokens(settings)
        self._socket: UnixSocket | None = None
        self.signals = Signals()
        self.gate = Gate(auth=self.auth, max_concurrent=settings.max_concurrent_requests)
        self._tasks = Tasks(log)
        self._ready_fd = settings.ready_fd
        self.started = False
        """True once :meth:`start` has completed (the gateway serves)."""

    async def serve(self) -> None:
        """Run until SIGTERM/SIGINT (or :meth:`request_stop`), then drain and shut down in order."""
        self.signals.install()
        try:
            try:
                started = await self._start_unless_stopped()
            except BaseException:
                self._report_not_ready()
                raise
            if not started:
                self._report_not_ready()
                return
            settle_heap()
            await self.signals.stop.wait()
        finally:
            await self.stop()

    async def _start_unless_stopped(self) -> bool:
        """:meth:`start`, abandoned when a stop signal arrives first (a model whose load keeps
        failing holds the start through its retries: minutes); False when abandoned."""
        starting = asyncio.ensure_future(self.start())
        stopped = asyncio.ensure_future(self.signals.stop.wait())
        try:
            await asyncio.wait((starting, stopped), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if starting.done():
            starting.result()  # its error, if it failed
            return True
        log.info("stop signal before the server was ready: not starting")
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        return False

    def request_stop(self) -> None:
        """As a signal does: the first call drains, the second skips the wait."""
        self.signals.received()

    async def start(self) -> None:
        settings = self.settings
        await self.pool.start()
        await self.models.apply(self.specs)  # TF Serving's checks (labels) apply at start too
        await self._update_health()
        log.info("%s", self.observability.describe())
        surfaces = self._surfaces()
        server = grpc.aio.server(options=grpc_options(settings))
        self.server = server
        self._add_grpc_services(server, [s for p in surfaces for s in p.grpc_services()])
        self.grpc_port, self._socket = bind_grpc(
            server,
            host=settings.grpc_bind_address,
            port=settings.port,
            socket_path=settings.grpc_socket_path,
            credentials=self.tls.grpc_credentials() if self.tls else None,
        )
        await server.start()
        if settings.rest_api_port:
            self.rest = self._http_server(surfaces)
            self.rest_port = await self.rest.start(
                settings.rest_api_bind_address,
                settings.rest_api_port,
                self.tls.ssl_context() if self.tls and settings.rest_api_enable_tls else None,
            )
        if settings.file_system_poll_wait_seconds > 0:
            every_s = settings.file_system_poll_wait_seconds
            poll = every(every_s, self.models.scan, what="file system poll", logger=log)
            self._tasks.spawn(poll, "file system poll")
        if settings.model_config_file and settings.model_config_file_poll_wait_seconds > 0:
            every_s = settings.model_config_file_poll_wait_seconds
            poll = poll_config_file(settings.model_config_file, every_s, self.models)
            self._tasks.spawn(poll, "config file poll")
        self.started = True
        self._report_ready()

    def _surfaces(self) -> list[ProtocolSurface]:
        """The protocols served, each on the gRPC port and the REST port: TF Serving's API and
        the Open Inference Protocol (KServe V2)."""
        return [
            TfServingSurface(self.core, TfServingOptions.from_settings(self.settings)),
            V2Surface(self.core, v2_options(self.settings), self.observability.model_stats),
        ]

    def _add_grpc_services(self, server: grpc.aio.Server, services: list[GrpcService]) -> None:
        """The protocols' services, health and reflection, each behind the gate (and observed
        when observability records calls)."""
        observed = self.observability.grpc_registry(server, services)
        registrar = self.gate.registrar(observed, [s.name for s in services if s.bounded])
        for service in services:
            service.add(registrar)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, registrar)
        names = service_names(services, HEALTH_SERVICE, reflection.SERVICE_NAME)
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
            reflection.aio.ReflectionServicer(names), registrar
        )

    def _http_server(self, surfaces: list[ProtocolSurface]) -> HttpServer:
        """The REST server: the protocols' APIs, the probes and observability's pages."""
        settings = self.settings
        routes = Routes()
        for path, page in self.observability.routes(self.pool).items():
            routes.add_exact(path, page)
        for surface in surfaces:
            surface.add_routes(routes)
        return HttpServer(
            routes,
            ready=self.core.ready,
            timeout_ms=settings.rest_api_timeout_in_ms,
            max_body_bytes=settings.rest_api_max_body_bytes,
            enable_cors=settings.rest_api_enable_cors_support,
            observe=self.observability.rest_observer(),
            front=Front(auth=self.auth, max_concurrent=settings.max_concurrent_requests),
            limits=rest_limits(settings),
        )

    async def stop(self) -> None:
        """Stop accepting, drain, stop workers, release everything. Safe to call twice."""
        surfaces: list[Surface] = [self.gate] if self.server is not None else []
        surfaces += [self.rest] if self.rest is not None else []
        await drain(
            surfaces,
            not_ready=self._stop_taking,
            grace_s=self.settings.shutdown_grace_seconds,
            hurry=self.signals.hurry,
        )
        final_s = 0.0 if self.signals.hurry.is_set() else FINAL_GRACE_S
        servers: list[Any] = []
        if self.server is not None:
            servers.append(self.server.stop(final_s))
            self.server = None
        if self.rest is not None:
            servers.append(self.rest.stop(final_s))
            self.rest = None
        await asyncio.gather(*servers)
        self.queues.fail_all(Unavailable("the server is shutting down"))
        await self._tasks.close()
        await self.models.close()
        await self.pool.close()
        await self.observability.close()
        if self._socket is not None:
            self._socket.release()
            self._socket = None
        log.info("tensorgate stopped")

    async def _stop_taking(self) -> None:
        """Drain's first step: NOT_SERVING everywhere, and open batches leave now."""
        await self.health.enter_graceful_shutdown()
        self.queues.flush()

    def _models_changed(self) -> None:
        self.observability.record_warmups(self.models)
        self._tasks.spawn(self._update_health(), "health update")

    async def _update_health(self) -> None:
        serving = health_pb2.HealthCheckResponse.SERVING
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        for name in self.models.model_names():
            await self.health.set(name, serving if self.models.is_available(name) else not_serving)
        await self.health.set("", serving if self.core.ready() else not_serving)

    def _report_ready(self) -> None:
        """Write one JSON line to ``--ready_fd`` (if given) and close it: for supervisors/tests."""
        fd, self._ready_fd = self._ready_fd, -1
        if fd >= 0:
            info = {"pid": os.getpid(), "grpc_port": self.grpc_port, "rest_port": self.rest_port}
            report_ready(fd, info)

    def _report_not_ready(self) -> None:
        """The start failed: close ``--ready_fd`` without a line, so whoever waits on it sees
        end-of-file at once (not only once the process has stopped its workers and exited)."""
        fd, self._ready_fd = self._ready_fd, -1
        if fd >= 0:
            os.close(fd)


YOUNG_COLLECTION_THRESHOLD = 10_000
"""Net container allocations between young-generation collections (CPython's default: 700)."""


def settle_heap() -> None:
    """Tune the cyclic garbage collector for serving, once started.

    Collect the start-up's garbage, then move what is left to the permanent generation
    (``gc.freeze``): full collections while serving then walk only what serving made, not every
    module, descriptor and model object of the start-up (tens of milliseconds each on a busy
    core). What the start-up made and serving later drops is still freed by reference counting;
    only a reference cycle among such objects would stay. And collect the young generation
    every :data:`YOUNG_COLLECTION_THRESHOLD` allocations rather than 700: objects that live a
    fraction of a second (calls in flight, span records queued for export) are then mostly freed
    before a collection visits them, and a collection of up to that many objects takes a
    millisecond or two.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)


def report_ready(fd: int, info: Mapping[str, Any]) -> None:
    """The ``--ready_fd`` protocol, writer side: ``info`` as one JSON line to ``fd``, then close
    it."""
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(dict(info)) + "\n")


def wait_ready(fd: int, timeout_s: float) -> dict[str, Any] | None:
    """The ``--ready_fd`` protocol, reader side (tests, bench, supervisors that must not poll logs):
    the JSON object written to the pipe ``fd``, or None on EOF or after ``timeout_s`` in total.

    ``fd`` is not closed.
    """
    data = b""
    deadline = time.monotonic() + timeout_s
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    line = data.decode().strip()
    if not line:
        return None
    info: dict[str, Any] = json.loads(line)
    return info
