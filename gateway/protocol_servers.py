"""The gRPC and REST servers of one front end over its core, with health, reflection and drain.

Used by the one-process gateway (:class:`gateway.one_process.Gateway`) and by each front-end
process (:class:`gateway.frontend.frontend_process.FrontEnd`). :meth:`Servers.start` registers
every protocol's gRPC services behind the gate and binds gRPC (TCP, TLS with
``--ssl_config_file``, the optional Unix socket) and REST; :meth:`~Servers.stop` drains them
(:mod:`gateway.drain`), stops them and fails what is still queued. With ``reuse_port`` several
processes bind the same ports (``SO_REUSEPORT``: the kernel spreads *connections*); otherwise a
port in use is an error, never silently shared.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from gateway.config.settings import Settings
from gateway.config.settings_field import port_to_bind
from gateway.drain import Signals, Surface, drain, shut_down
from gateway.errors import Unavailable
from gateway.listen import TlsMaterial, UnixSocket, bind_grpc
from gateway.observability.hooks import Observability
from gateway.serving.core import ServingCore
from gateway.serving.queues import BatchQueues
from gateway.serving.registry import Registry, available_servables
from gateway.tfserving.rest import openapi as tfserving_openapi
from gateway.tfserving.surface import TfServingOptions, TfServingSurface
from gateway.transport.auth import load_roles
from gateway.transport.gate import Gate
from gateway.transport.grpc_services import generated, register
from gateway.transport.http import docs
from gateway.transport.http.connections import rest_limits
from gateway.transport.http.front import Front
from gateway.transport.http.routes import ExtraRoute, Routes
from gateway.transport.http.server import HttpServer
from gateway.transport.open_streams import BoundedHealth, BoundedReflection
from gateway.transport.surface import GrpcService, ProtocolSurface, service_names
from gateway.v2.model_control import ModelRepository
from gateway.v2.rest import openapi as v2_openapi
from gateway.v2.surface import V2Surface
from gateway.v2.surface import options_from as v2_options
from gateway.v2_log import LOG_AS as V2_LOG_AS
from gateway.v2_log import REST_INFER as V2_REST_LOG

log = logging.getLogger(__name__)

HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name

FINAL_GRACE_S = 0.5
"""After the drain, how long calls that are just being refused may take to get their answer."""


KEEPALIVE_TIME_MS = 60_000
"""How long a gRPC connection may be silent before the server pings it (grpc's default is two
hours): a peer that vanished without closing is found and its connection slot freed."""
KEEPALIVE_TIMEOUT_MS = 20_000
"""How long the server waits for that ping's answer before closing the connection."""


MAX_FRAME_BYTES = 4 * 1024 * 1024
"""HTTP/2 frames a client may send (SETTINGS_MAX_FRAME_SIZE; HTTP/2's default is 16 KiB): a
600 KB image tensor then arrives in one frame instead of ~37, which cut grpc's receive CPU per call
by about a quarter here (a bare grpc.aio server answering such calls: 1.27 → 0.98 ms)."""


def grpc_options(settings: Settings, *, reuse_port: bool = False) -> list[tuple[str, Any]]:
    """Server channel options: message and connection limits, no silent port sharing (unless
    ``reuse_port``: several front ends on one port), keepalive pings that find dead peers, user
    overrides (--grpc_channel_arguments) last.

    grpc core closes a connection idle for ``--grpc_idle_timeout_seconds`` (no call open: health
    ``Watch`` and reflection streams end after as long, :mod:`gateway.transport.open_streams`)
    and refuses new ones past
    ``--grpc_max_connections``; it has no way to close the oldest idle connection for a new one
    instead, nor a bound per peer address (grpcio hands the application neither the accepted
    sockets nor the connections)."""
    return [
        ("grpc.so_reuseport", int(reuse_port)),
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.max_allowed_incoming_connections", settings.grpc_max_connections),
        ("grpc.max_concurrent_streams", settings.grpc_max_concurrent_streams),
        ("grpc.max_connection_idle_ms", int(settings.grpc_idle_timeout_seconds * 1000)),
        ("grpc.server_handshake_timeout_ms", int(settings.rest_api_header_timeout_seconds * 1000)),
        ("grpc.http2.max_frame_size", MAX_FRAME_BYTES),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
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


class Servers:
    """The servers over ``core`` (its ``queues`` flushed and failed at stop).

    ``pages``: exact REST routes of observability (the metrics page). ``reuse_port``: share the
    ports with other front ends. ``unix_socket``: also listen on ``--grpc_socket_path`` (one
    process of several may: a Unix socket cannot be shared). ``repository``: V2's repository
    extension (default: over the core's models).
    """

    def __init__(
        self,
        settings: Settings,
        core: ServingCore,
        queues: BatchQueues,
        observability: Observability,
        *,
        pages: Callable[[], dict[str, ExtraRoute]],
        reuse_port: bool = False,
        unix_socket: bool = True,
        repository: ModelRepository | None = None,
    ) -> None:
        self.settings = settings
        self.core = core
        self.queues = queues
        self.observability = observability
        self.health = BoundedHealth(settings.grpc_idle_timeout_seconds)
        self.server: grpc.aio.Server | None = None
        self.rest: HttpServer | None = None
        self.grpc_port = 0
        self.rest_port = 0
        self.tls = TlsMaterial.load(settings.ssl_config_file) if settings.ssl_config_file else None
        roles = load_roles(settings)
        self.auth, self.admin = roles.serving, roles.admin
        self.gate = Gate(
            auth=self.auth, max_concurrent=settings.max_concurrent_requests, budget=core.budget
        )
        self._pages = pages
        self._reuse_port = reuse_port
        self._unix_socket = unix_socket
        self._repository = repository
        self._socket: UnixSocket | None = None

    async def start(self, grpc_port: int, rest_port: int) -> None:
        """Bind gRPC on ``grpc_port`` (0: an OS-chosen port) and, when ``rest_port`` is not 0,
        REST (-1: an OS-chosen port, ``--rest_api_port``'s OS_CHOSEN_PORT); :attr:`grpc_port` and
        :attr:`rest_port` are then the bound ones."""
        settings = self.settings
        surfaces = self._surfaces()
        server = grpc.aio.server(options=grpc_options(settings, reuse_port=self._reuse_port))
        self.server = server
        self._add_grpc_services(server, [s for p in surfaces for s in p.grpc_services()])
        self.grpc_port, self._socket = bind_grpc(
            server,
            host=settings.grpc_bind_address,
            port=grpc_port,
            socket_path=settings.grpc_socket_path if self._unix_socket else "",
            credentials=self.tls.grpc_credentials() if self.tls else None,
        )
        await server.start()
        if rest_port:
            self.rest = self._http_server(surfaces)
            self.rest_port = await self.rest.start(
                settings.rest_api_bind_address,
                port_to_bind(rest_port),
                self.tls.ssl_context() if self.tls and settings.rest_api_enable_tls else None,
                reuse_port=self._reuse_port,
            )

    def _surfaces(self) -> list[ProtocolSurface]:
        """The protocols served, each on the gRPC port and the REST port: TF Serving's API and
        the Open Inference Protocol (KServe V2), whose ModelInfer calls are request-logged as
        TF Serving's Predict calls (:mod:`gateway.v2_log`)."""
        return [
            TfServingSurface(self.core, TfServingOptions.from_settings(self.settings, self.admin)),
            V2Surface(
                self.core,
                v2_options(self.settings, self.admin),
                self.observability.model_stats,
                self._repository,
                log_as=V2_LOG_AS,
                rest_log=V2_REST_LOG,
            ),
        ]

    def _add_grpc_services(self, server: grpc.aio.Server, services: list[GrpcService]) -> None:
        """The protocols' services, health and reflection, each call run through the chain
        :func:`~gateway.transport.grpc_services.register` builds (observation, gate, error rule,
        servicer)."""
        names = service_names(services, HEALTH_SERVICE, reflection.SERVICE_NAME)
        reflecting = BoundedReflection(names, self.settings.grpc_idle_timeout_seconds)
        add_health = health_pb2_grpc.add_HealthServicer_to_server
        add_reflection = reflection_pb2_grpc.add_ServerReflectionServicer_to_server
        everything = [
            *services,
            generated(HEALTH_SERVICE, functools.partial(add_health, self.health)),
            generated(reflection.SERVICE_NAME, functools.partial(add_reflection, reflecting)),
        ]
        observer = self.observability.grpc_observer(self.core.models)
        register(server, everything, self.gate, observer)

    def _http_server(self, surfaces: list[ProtocolSurface]) -> HttpServer:
        """The REST server: the protocols' APIs, the probes, observability's pages and, with
        ``--enable_api_docs``, each API's OpenAPI document and docs page."""
        settings = self.settings
        routes = Routes()
        for path, page in self._pages().items():
            routes.add_exact(path, page)
        for surface in surfaces:
            surface.add_routes(routes)
        if settings.enable_api_docs:
            models = self.core.models
            docs.add_docs(
                routes,
                {
                    "/v1": ("TF Serving REST API", lambda: tfserving_openapi.document(models)),
                    "/v2": (
                        "Open Inference Protocol REST API",
                        lambda: v2_openapi.document(models),
                    ),
                },
                served=lambda: available_servables(models),
                bearer=self.auth is not None,
            )
        return HttpServer(
            routes,
            ready=self.core.ready,
            timeout_ms=settings.rest_api_timeout_in_ms,
            max_body_bytes=settings.rest_api_max_body_bytes,
            max_json_bytes=settings.rest_api_max_json_bytes,
            enable_cors=settings.rest_api_enable_cors_support,
            observe=self.observability.rest_observer(self.core.models),
            front=Front(auth=self.auth, max_concurrent=settings.max_concurrent_requests),
            limits=rest_limits(settings),
            budget=self.core.budget,
        )

    async def update_health(self, models: Registry) -> None:
        """grpc.health.v1 from the registry: SERVING for each available model and, when every
        model is, for the whole server (``""``)."""
        serving = health_pb2.HealthCheckResponse.SERVING
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        for name in models.model_names():
            await self.health.set(name, serving if models.is_available(name) else not_serving)
        await self.health.set("", serving if self.core.ready() else not_serving)

    async def stop(
        self, signals: Signals, together: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Drain (readiness off, new calls refused, running ones finish within
        ``--shutdown_grace_seconds`` or until ``signals.hurry``), stop both servers, fail what is
        still queued. ``together``: awaited once the gRPC shutdown has begun, before the last
        refusals are answered (front ends sharing the ports: :func:`gateway.drain.shut_down`).
        Safe to call twice."""
        surfaces: list[Surface] = [self.gate] if self.server is not None else []
        surfaces += [self.rest] if self.rest is not None else []
        await drain(
            surfaces,
            not_ready=self._stop_taking,
            grace_s=self.settings.shutdown_grace_seconds,
            hurry=signals.hurry,
        )
        final_s = 0.0 if signals.hurry.is_set() else FINAL_GRACE_S
        if together is not None and final_s:  # the others may still drain meanwhile
            final_s += self.settings.shutdown_grace_seconds
        holding = self.gate if self.server is not None else None
        servers: list[Any] = []
        if self.server is not None:
            servers.append(self.server.stop(final_s))
            self.server = None
        if self.rest is not None:
            servers.append(self.rest.stop(final_s))
            self.rest = None
        await shut_down(holding, servers, hurry=signals.hurry, together=together)
        self.queues.fail_all(Unavailable("the server is shutting down"))
        if self._socket is not None:
            self._socket.release()
            self._socket = None

    async def _stop_taking(self) -> None:
        """Drain's first step: NOT_SERVING everywhere, and open batches leave now."""
        await self.health.enter_graceful_shutdown()
        self.queues.flush()
