"""The HTTP server core: every protocol's REST API, served on the gateway's event loop by our own
HTTP/1.1 connections (:mod:`~gateway.transport.http.connection`, llhttp through ``httptools``).

What it serves is a :class:`~gateway.transport.http.routes.Routes` table: exact routes (the
metrics page, the docs pages), the probes, and the APIs the protocol packages register (TF
Serving's ``/v1/``, the Open Inference Protocol's ``/v2``):

- ``GET /healthz`` (liveness: 200 while the process serves) and ``GET /readyz`` (200 only when
  ``ready()`` and not draining, else 503), plain text; HEAD too;
- an API call: parsed once by its API (:meth:`HttpApi.parse`, kept for the next call of the same
  line), then, in order, the bearer token (401), draining and the concurrency limit (503;
  :mod:`~gateway.transport.http.front`), the API's refusal of a request line outside its
  grammar, and the API's handler;
- any other path is 404 ``{"error": ...}`` (the message never quotes the path).

Connections are bounded by :mod:`~gateway.transport.http.connections` (count, per address,
header/idle/write timeouts) and :mod:`~gateway.transport.http.connection` (head sizes, framing,
bodies); a call's body and deadline by :class:`~gateway.transport.http.bounds.CallBounds` (400
over the size limit, 408 for a body that has not arrived within its deadline, 504 past the call's
deadline).

An ``observe`` hook (observability) wraps each API call with the call's parse. Failures are
``{"error": "<message>"}`` with :func:`gateway.errors.http_status`; 429 and 503 carry
``Retry-After: 1``; a failed call's answer carries its canonical code name
(:attr:`~gateway.transport.http.http_messages.HttpResponse.code`). With ``enable_cors``, every
answer carries ``Access-Control-Allow-Origin: *`` and TF Serving's other CORS headers, with
``Server-Timing`` exposed to pages, and an ``OPTIONS`` preflight on any path is answered 200.

Small JSON bodies are read on the loop; the body size limit bounds them. A protocol may read a
large one in a thread (V2's ``/v2`` infer bodies over 1 MiB: :mod:`gateway.v2.rest.request_body`),
where only orjson's parse itself still holds the GIL.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import ssl
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gateway.errors import FailedPrecondition, Internal, NotFound, ServingError
from gateway.serving.budget import MemoryBudget
from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.connection import HttpConnection
from gateway.transport.http.connections import ConnectionLimits, Connections
from gateway.transport.http.front import Front, HttpError, check_probe_method
from gateway.transport.http.http_messages import TEXT, HttpRequest, HttpResponse
from gateway.transport.http.json_error import failure_response
from gateway.transport.http.routes import ApiCall, HttpApi, Observe, Routes

log = logging.getLogger(__name__)

HEALTHZ = "/healthz"
READYZ = "/readyz"
PROBES = frozenset((HEALTHZ, READYZ))
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, GET",
    "Access-Control-Allow-Headers": "Content-Type",
}
"""TF Serving's ``AddCORSHeaders``."""
EXPOSED_HEADERS = "Server-Timing"
"""Answer headers a CORS page may read (beyond the safelisted ones)."""

_NO_IPV6 = (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL)
"""Why listening on ``::`` fails on a host without IPv6 (every interface is then IPv4's)."""
BACKLOG = 1024


def cors_lines() -> bytes:
    """The CORS header lines of every answer (the preflight's own allowed headers apart)."""
    lines = [
        f"{name}: {value}\r\n"
        for name, value in CORS_HEADERS.items()
        if name != "Access-Control-Allow-Headers"
    ]
    lines.append(f"Access-Control-Expose-Headers: {EXPOSED_HEADERS}\r\n")
    return "".join(lines).encode("ascii")


class HttpServer:
    """The routes of ``routes`` on one TCP port.

    ``ready``: whether every configured model serves (``/readyz``). ``timeout_ms``: deadline of
    each call (``--rest_api_timeout_in_ms``). ``max_body_bytes``: largest request body accepted.
    ``enable_cors``: ``--rest_api_enable_cors_support``. ``observe``: wraps every API call
    (observability). ``front``: tokens and the concurrency bound. ``limits``: connections.
    ``budget``: the in-flight bytes that bodies being read count against (``--max_inflight_bytes``;
    :class:`~gateway.transport.http.bounds.CallBounds`).
    """

    def __init__(
        self,
        routes: Routes,
        *,
        ready: Callable[[], bool],
        timeout_ms: int,
        max_body_bytes: int,
        max_json_bytes: int | None = None,
        enable_cors: bool = False,
        observe: Observe | None = None,
        front: Front | None = None,
        limits: ConnectionLimits | None = None,
        budget: MemoryBudget | None = None,
    ) -> None:
        limits = limits or ConnectionLimits()
        if limits.max_body_bytes != max_body_bytes:
            limits = replace(limits, max_body_bytes=max_body_bytes)
        self.bounds = CallBounds(
            timeout_ms=timeout_ms,
            max_body_bytes=max_body_bytes,
            max_json_bytes=max_json_bytes,
            body_timeout_s=limits.body_timeout_s,
            budget=budget,
        )
        self._routes = routes
        self._ready = ready
        self._enable_cors = enable_cors
        self._observe = observe
        self.front = front or Front()
        self.connections = Connections(limits, self._handle, cors_lines() if enable_cors else b"")
        self._listeners: list[asyncio.Server] = []
        self._not_apis: frozenset[str] = PROBES
        """The probes and the exact routes (as :meth:`start` found them)."""

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None = None,
        *,
        reuse_port: bool = False,
    ) -> int:
        """Listen on ``host``:``port`` (with TLS when ``ssl_context``) and return the bound port
        (``port`` 0: OS-chosen). FailedPrecondition when the address cannot be bound.
        ``reuse_port``: share the port with other processes that set it (``SO_REUSEPORT``).

        ``host`` "" listens on every interface, IPv4 and IPv6 (one socket each; with port 0, IPv6
        takes the port the OS chose for IPv4, so one port serves both).
        """
        loop = asyncio.get_running_loop()
        self._not_apis = PROBES | self._routes.exact_paths()
        listeners: list[asyncio.Server] = []
        hosts = [host] if host or port else ["0.0.0.0", "::"]
        handshake = self.connections.limits.header_timeout_s if ssl_context else None
        try:
            for address in hosts:
                try:
                    listener = await loop.create_server(
                        self._connection,
                        address or None,
                        port,
                        ssl=ssl_context,
                        reuse_port=reuse_port or None,
                        backlog=BACKLOG,
                        ssl_handshake_timeout=handshake,
                    )
                except OSError as exc:
                    if address == "::" and exc.errno in _NO_IPV6:
                        continue
                    raise FailedPrecondition(
                        f"cannot listen for REST on {host or '*'}:{port}: {exc.strerror}"
                    ) from None
                listeners.append(listener)
                port = int(listener.sockets[0].getsockname()[1])
        except BaseException:
            for listener in listeners:
                listener.close()
            raise
        self._listeners = listeners
        self.connections.start()
        where = " and ".join(
            _address(s.getsockname()) for listener in listeners for s in listener.sockets
        )
        log.info("Exporting HTTP/REST API at:%s ...%s", where, " (TLS)" if ssl_context else "")
        return port

    def _connection(self) -> HttpConnection:
        """A new connection (the protocol factory of the listening sockets)."""
        return HttpConnection(self.connections)

    @property
    def last_arrival(self) -> float:
        """``time.monotonic()`` when the latest API call arrived."""
        return self.front.last_arrival

    def start_draining(self) -> None:
        """Refuse new API calls with 503 from now on; probes still answer (``/readyz`` 503)."""
        self.front.start_draining()

    async def wait_idle(self) -> None:
        """Return once no API call is running."""
        await self.front.wait_idle()

    async def stop(self, grace_s: float) -> None:
        """Stop accepting, let in-flight calls finish for ``grace_s`` seconds, cancel the rest,
        close every connection. Safe to call twice."""
        listeners, self._listeners = self._listeners, []
        if not listeners:
            return
        self.front.start_draining()
        for listener in listeners:
            listener.close()
        self.connections.close_waiting()  # idle connections close now, busy ones after
        try:
            await asyncio.wait_for(self.front.wait_idle(), grace_s)
        except TimeoutError:
            log.warning(
                "%d REST calls still running after %.1f s; cancelling",
                self.front.in_flight,
                grace_s,
            )
        self.connections.close_all()
        for listener in listeners:
            await listener.wait_closed()

    # -- dispatch -------------------------------------------------------------------------------
    async def _handle(self, request: HttpRequest) -> HttpResponse:
        """The answer to ``request`` (never raises but CancelledError)."""
        path = request.path
        if path in self._not_apis or (request.method == "OPTIONS" and self._enable_cors):
            return await self._answer_other(request, path)
        found = self._routes.api_call(request.method, path)
        if found is None:
            return await self._answer_other(request, path)
        api, call = found
        if self._observe is None:
            return await self._answer_call(request, api, call)
        return await self._observe(request, call, lambda: self._answer_call(request, api, call))

    async def _answer_call(
        self, request: HttpRequest, api: HttpApi[Any], call: ApiCall[Any]
    ) -> HttpResponse:
        """An API call: token, admission, the API's refusal or handler."""
        front = self.front
        try:
            if front.auth is not None:
                front.authenticate(request.path, request.headers.get("authorization"))
            front.enter()
            try:
                if call.refusal is not None:
                    raise call.refusal
                response = await api.serve(request, call, self.bounds)
            finally:
                front.leave()
        except Exception as exc:
            response = self._failure(request, exc)
        if request.held:
            self.bounds.release(request)
        if request.refused or request.method == "CONNECT":
            response.close = True  # an unread body; a tunnel
        return response

    async def _answer_other(self, request: HttpRequest, path: str) -> HttpResponse:
        """Not an API call: an exact route, a probe, a preflight, or 404."""
        method = request.method
        try:
            exact = self._routes.exact(path)
            if exact is not None:
                handler, public = exact
                if not public:
                    self.front.authenticate(path, request.headers.get("authorization"))
                response = await handler(request)
            elif method == "OPTIONS" and self._enable_cors:
                response = _preflight(request)
            elif path in PROBES:
                self.front.authenticate(path, request.headers.get("authorization"))
                check_probe_method(method, path)
                response = self._probe(path)
            else:
                self.front.authenticate(path, request.headers.get("authorization"))
                raise NotFound(f"Not found: no route for {method} on this path")
        except Exception as exc:
            response = self._failure(request, exc)
        if request.held:
            self.bounds.release(request)
        return response

    def _probe(self, path: str) -> HttpResponse:
        if path == HEALTHZ:
            return HttpResponse(200, b"ok\n", TEXT)
        if not self.front.draining and self._ready():
            return HttpResponse(200, b"ready\n", TEXT)
        return HttpResponse(503, b"not ready\n", TEXT)

    @staticmethod
    def _failure(request: HttpRequest, exc: Exception) -> HttpResponse:
        if isinstance(exc, HttpError):
            return exc.response()
        if isinstance(exc, ServingError):
            response = failure_response(exc)
            log.debug("REST call failed with %d: %s", response.status, exc.message)
            return response
        log.exception("REST %s %s failed", request.method, request.path[:200])
        return failure_response(Internal(f"{type(exc).__name__}: {exc}"))


def _address(address: Any) -> str:
    """A bound socket's address (IPv4 or IPv6) as ``host:port``."""
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _preflight(request: HttpRequest) -> HttpResponse:
    """A CORS preflight: allow the methods TF Serving allows and whichever headers are asked
    (the origin, methods and exposed headers are on every answer)."""
    asked = request.headers.get("access-control-request-headers")
    allowed = asked or CORS_HEADERS["Access-Control-Allow-Headers"]
    return HttpResponse(200, b"", None, {"Access-Control-Allow-Headers": allowed})
