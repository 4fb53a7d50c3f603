"""The HTTP server core: every protocol's REST API, served by aiohttp on the gateway's event loop.

What it serves is a :class:`~gateway.transport.http.routes.Routes` table: exact routes (the
metrics page), the probes, and the APIs the protocol packages register (TF Serving's ``/v1/``):

- ``GET /healthz`` (liveness: 200 while the process serves) and ``GET /readyz`` (200 only when
  ``ready()`` and not draining, else 503), plain text; HEAD too;
- an API call: parsed once by its API (:meth:`HttpApi.parse`), then, in order, the bearer token
  (401), draining and the concurrency limit (503; :mod:`~gateway.transport.http.front`), the
  API's refusal of a request line outside its grammar, and the API's handler;
- any other path is 404 ``{"error": ...}``.

Connections are bounded by :mod:`~gateway.transport.http.connections` (count, header/body/idle
timeouts, JSON errors from the HTTP parser); a call's body and deadline by
:class:`~gateway.transport.http.bounds.CallBounds` (400 over the size limit, 408 for a body that
has not arrived within its deadline, 504 past the call's deadline).

An ``observe`` hook (observability) wraps each API call with the call's parse. Failures are
``{"error": "<message>"}`` with :func:`gateway.errors.http_status`; 429 and 503 carry
``Retry-After: 1``; a failed call's response carries its canonical code name under
:data:`~gateway.transport.http.json_error.STATUS_KEY`. With ``enable_cors``, every response
carries ``Access-Control-Allow-Origin: *`` and TF Serving's other CORS headers, and an
``OPTIONS`` preflight on any path is answered 200.

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
from typing import Any

from aiohttp import web

from gateway.errors import FailedPrecondition, Internal, NotFound, ServingError
from gateway.serving.budget import MemoryBudget
from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.connections import ConnectionLimits, make_server, note_request
from gateway.transport.http.front import Front, HttpError, check_probe_method
from gateway.transport.http.json_error import failure_response
from gateway.transport.http.routes import ApiCall, ExtraRoute, HttpApi, Observe, Routes

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

_NO_IPV6 = (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL)
"""Why listening on ``::`` fails on a host without IPv6 (every interface is then IPv4's)."""

_CANCEL_AFTER_S = 0.001
"""After stop()'s own grace wait, how long aiohttp waits before cancelling handlers still running
(aiohttp reads 0 as "wait forever")."""


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
        self._limits = limits or ConnectionLimits()
        self.bounds = CallBounds(
            timeout_ms=timeout_ms,
            max_body_bytes=max_body_bytes,
            max_json_bytes=max_json_bytes,
            body_timeout_s=self._limits.body_timeout_s,
            budget=budget,
        )
        self._routes = routes
        self._ready = ready
        self._enable_cors = enable_cors
        self._observe = observe
        self.front = front or Front()
        self._runner: web.ServerRunner | None = None
        self._sites: list[web.TCPSite] = []

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
        runner = web.ServerRunner(
            make_server(self._handle, self._limits), shutdown_timeout=_CANCEL_AFTER_S
        )
        await runner.setup()
        sites: list[web.TCPSite] = []
        hosts: list[str | None] = [host or None] if host or port else ["0.0.0.0", "::"]
        try:
            for address in hosts:
                site = web.TCPSite(
                    runner, address, port, ssl_context=ssl_context, reuse_port=reuse_port or None
                )
                try:
                    await site.start()
                except OSError as exc:
                    if address == "::" and exc.errno in _NO_IPV6:
                        continue
                    raise FailedPrecondition(
                        f"cannot listen for REST on {host or '*'}:{port}: {exc.strerror}"
                    ) from None
                sites.append(site)
                port = int(runner.addresses[0][1])
        except BaseException:
            await runner.cleanup()
            raise
        self._runner, self._sites = runner, sites
        bound = port
        where = " and ".join(_address(a) for a in runner.addresses)
        log.info("Exporting HTTP/REST API at:%s ...%s", where, " (TLS)" if ssl_context else "")
        return bound

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
        runner, sites = self._runner, self._sites
        if runner is None:
            return
        self._runner, self._sites = None, []
        self.front.start_draining()
        for site in sites:
            await site.stop()
        if runner.server is not None:
            runner.server.pre_shutdown()  # idle keep-alive connections close now, busy ones after
        try:
            await asyncio.wait_for(self.front.wait_idle(), grace_s)
        except TimeoutError:
            log.warning(
                "%d REST calls still running after %.1f s; cancelling",
                self.front.in_flight,
                grace_s,
            )
        await runner.cleanup()

    # -- dispatch -------------------------------------------------------------------------------
    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        note_request(request)
        path = request.raw_path.partition("?")[0]
        extra = self._routes.exact(path)
        api = None if extra is not None or path in PROBES else self._routes.api_for(path)
        if api is None:
            return await self._answer(request, path, extra, None, None)
        call = api.parse(request.method, path)
        if self._observe is None:
            return await self._answer(request, path, None, api, call)
        return await self._observe(
            request, call, lambda: self._answer(request, path, None, api, call)
        )

    async def _answer(
        self,
        request: web.BaseRequest,
        path: str,
        extra: ExtraRoute | None,
        api: HttpApi[Any] | None,
        call: ApiCall[Any] | None,
    ) -> web.StreamResponse:
        counted = False
        try:
            self.front.authenticate(path, request.headers.get("Authorization"))
            if call is not None:
                self.front.enter()
                counted = True
            response = await self._route(request, path, extra, api, call)
        except HttpError as exc:
            response = exc.response()
        except ServingError as exc:
            response = _failed(exc)
        except Exception as exc:
            log.exception("REST %s %s failed", request.method, path[:200])
            response = _failed(Internal(f"{type(exc).__name__}: {exc}"))
        finally:
            self.bounds.release(request)
            if counted:
                self.front.leave()
        if request.method == "CONNECT" or self.bounds.refused(request):
            response.force_close()  # a tunnel for aiohttp; an unread body
        if self._enable_cors:
            for name, value in CORS_HEADERS.items():
                response.headers.setdefault(name, value)
        return response

    async def _route(
        self,
        request: web.BaseRequest,
        path: str,
        extra: ExtraRoute | None,
        api: HttpApi[Any] | None,
        call: ApiCall[Any] | None,
    ) -> web.StreamResponse:
        method = request.method
        if extra is not None:
            return await extra(request)
        if method == "OPTIONS" and self._enable_cors:
            return _preflight(request)
        if path in PROBES:
            check_probe_method(method, path)
            if path == HEALTHZ:
                return web.Response(text="ok\n")
            ready = not self.front.draining and self._ready()
            return web.Response(
                status=200 if ready else 503, text="ready\n" if ready else "not ready\n"
            )
        if api is None or call is None:
            raise NotFound(f"Not found: {method} {path}")
        if call.refusal is not None:
            raise call.refusal
        return await api.serve(request, call, self.bounds)


def _address(address: Any) -> str:
    """An aiohttp bound address (an IPv4 or IPv6 socket name) as ``host:port``."""
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _failed(exc: ServingError) -> web.Response:
    response = failure_response(exc)
    log.debug("REST call failed with %d: %s", response.status, exc.message)
    return response


def _preflight(request: web.BaseRequest) -> web.Response:
    """A CORS preflight: allow the methods TF Serving allows and whichever headers are asked."""
    response = web.Response(status=200)
    asked = request.headers.get("Access-Control-Request-Headers")
    response.headers.update(CORS_HEADERS)
    if asked:
        response.headers["Access-Control-Allow-Headers"] = asked
    return response
