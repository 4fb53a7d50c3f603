"""REST adapter: TF Serving's HTTP/JSON API served by aiohttp on the gateway's event loop.

Routes, a few lines each — convert in (:mod:`gateway.tfserving.rest.json_request`), await the core,
convert out:

- ``POST /v1/models/{m}[/versions/{v}|/labels/{l}]:predict`` (and ``:classify``, ``:regress``
  through the ``classify_regress`` hook; without one they answer 501), ``GET .../{m}[...]``
  (status) and ``GET .../metadata`` — the grammar is :mod:`gateway.tfserving.rest.paths`;
- ``GET /healthz`` (liveness: 200 while the process serves) and ``GET /readyz`` (200 only when
  every configured model is AVAILABLE and the server is not draining, else 503), plain text; HEAD
  too;
- ``extra_routes``: exact raw paths (e.g. a Prometheus page) handled by the given coroutines;
- any other path outside ``/v1/`` is 404 ``{"error": ...}``.

Before routing, :mod:`~gateway.transport.http.front` checks the method (405 with ``Allow``), the
bearer token (401), draining and the concurrency limit (503); connections are bounded by
:mod:`~gateway.transport.http.connections` (count, header/body/idle timeouts, JSON errors from the
HTTP parser). A body that has not arrived within its deadline is 408.
A ``middleware`` (aiohttp's ``(request, handler)`` shape) wraps every request; a failed call's
response carries its canonical code name under :data:`STATUS_KEY` (``response[STATUS_KEY]``).

Contract: each API call's deadline is ``time.monotonic() + timeout_ms / 1000`` from when its body
has been read, and is enforced around every await of the core or the hook (504 when it passes).
Failures are ``{"error": "<message>"}`` with :func:`gateway.errors.http_status`; 429 and 503 carry
``Retry-After: 1``. A body over ``max_body_bytes`` is 400 before any of it is parsed (TF Serving
sets no limit; the issue asks for 400, like every other malformed-request error). With
``enable_cors``, every response carries ``Access-Control-Allow-Origin: *`` and TF Serving's other
CORS headers, and an ``OPTIONS`` preflight on any path is answered 200.

JSON work (orjson, numpy) runs on the loop: it is C-speed and holds the GIL either way, so a thread
would not free the loop; the body size limit bounds it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import numpy as np
from aiohttp import web

from gateway.errors import (
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    ServingError,
    Unimplemented,
    http_status,
)
from gateway.serving.core import ModelRef, ServingCore
from gateway.serving.signature import Signature
from gateway.tfserving.codec import messages
from gateway.tfserving.rest import json_request, json_response, paths
from gateway.transport.http.connections import ConnectionLimits, make_server, note_request
from gateway.transport.http.front import Front, HttpError, check_method, parse_once
from gateway.transport.http.json_error import error_body

log = logging.getLogger(__name__)

ClassifyRegress = Callable[[str, ModelRef, dict[str, Any], float], Awaitable[dict[str, Any]]]
"""``(method: "classify" | "regress", ref, parsed JSON body, deadline) -> JSON-able dict``; raises
ServingError for failures. ``deadline`` is in ``time.monotonic()`` seconds."""

ExtraRoute = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
"""Handles one exact raw path (any method); its errors become 500 ``{"error": ...}``."""

Middleware = Callable[[web.BaseRequest, ExtraRoute], Awaitable[web.StreamResponse]]
"""Wraps the handling of every request: ``await middleware(request, handler)``."""

STATUS_KEY = web.ResponseKey("tensorgate_status", str)
"""Set on error responses: the canonical code name (``"NOT_FOUND"``, ...) of the failure."""

HEALTHZ = "/healthz"
READYZ = "/readyz"
RETRY_AFTER_S = "1"
JSON = "application/json"
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, GET",
    "Access-Control-Allow-Headers": "Content-Type",
}
"""TF Serving's ``AddCORSHeaders``."""

_CONTINUE = "100-continue"
_CANCEL_AFTER_S = 0.001
"""After stop()'s own grace wait, how long aiohttp waits before cancelling handlers still running
(aiohttp reads 0 as "wait forever")."""


class RestServer:
    """The REST API of one :class:`ServingCore` on one TCP port.

    ``timeout_ms``: deadline of each call (``--rest_api_timeout_in_ms``). ``enable_cors``:
    ``--rest_api_enable_cors_support``. ``max_body_bytes``: largest request body accepted.
    ``max_elements``: largest element count of one input tensor. ``max_request_bytes``: most
    bytes one request's decoded tensors may take (None: no bound). ``classify_regress``: serves
    ``:classify`` / ``:regress`` (None: 501). ``extra_routes``: exact raw path → handler, checked
    before everything else. ``middleware``: wraps every request (observability).
    """

    def __init__(
        self,
        core: ServingCore,
        *,
        timeout_ms: int,
        enable_cors: bool,
        max_body_bytes: int,
        max_elements: int,
        classify_regress: ClassifyRegress | None = None,
        extra_routes: Mapping[str, ExtraRoute] | None = None,
        middleware: Middleware | None = None,
        max_request_bytes: int | None = None,
        front: Front | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        if timeout_ms < 1 or max_body_bytes < 1 or max_elements < 1:
            raise ValueError(
                "timeout_ms, max_body_bytes and max_elements must be >= 1, got "
                f"{timeout_ms}, {max_body_bytes}, {max_elements}"
            )
        self._core = core
        self._timeout_ms = timeout_ms
        self._enable_cors = enable_cors
        self._max_body_bytes = max_body_bytes
        self._max_elements = max_elements
        self._max_request_bytes = max_request_bytes
        self._classify_regress = classify_regress
        self._extra_routes = dict(extra_routes or {})
        self._middleware = middleware
        self.front = front or Front()
        self._limits = limits or ConnectionLimits()
        self._runner: web.ServerRunner | None = None
        self._site: web.TCPSite | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> int:
        """Listen on ``host``:``port`` (with TLS when ``ssl_context``) and return the bound port
        (``port`` 0: OS-chosen). FailedPrecondition when the address cannot be bound.

        ``host`` "" listens on every interface, IPv4 and IPv6 (one socket each: with port 0 they
        may get different ports, and the first is returned — give an address for port 0).
        """
        handler: ExtraRoute = self._handle
        middleware = self._middleware
        if middleware is not None:

            async def handler(request: web.BaseRequest) -> web.StreamResponse:
                return await middleware(request, self._handle)

        runner = web.ServerRunner(
            make_server(handler, self._limits), shutdown_timeout=_CANCEL_AFTER_S
        )
        await runner.setup()
        site = web.TCPSite(runner, host or None, port, ssl_context=ssl_context)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise FailedPrecondition(
                f"cannot listen for REST on {host or '*'}:{port}: {exc.strerror}"
            ) from None
        except BaseException:
            await runner.cleanup()
            raise
        self._runner, self._site = runner, site
        bound = int(runner.addresses[0][1])
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
        runner, site = self._runner, self._site
        if runner is None or site is None:
            return
        self._runner = self._site = None
        self.front.start_draining()
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
        counted = False
        try:
            self.front.authenticate(path, request.headers.get("Authorization"))
            if paths.is_api_path(path) and path not in self._extra_routes:
                self.front.enter()
                counted = True
            response = await self._route(request, path)
        except HttpError as exc:
            response = exc.response()
        except ServingError as exc:
            response = _error(exc)
        except Exception as exc:
            log.exception("REST %s %s failed", request.method, path[:200])
            response = _error(Internal(f"{type(exc).__name__}: {exc}"))
        finally:
            if counted:
                self.front.leave()
        if request.method == "CONNECT":
            response.force_close()  # aiohttp would treat the connection as a tunnel
        if self._enable_cors:
            for name, value in CORS_HEADERS.items():
                response.headers.setdefault(name, value)
        return response

    async def _route(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        method = request.method
        extra = self._extra_routes.get(path)
        if extra is not None:
            return await extra(request)
        if method == "OPTIONS" and self._enable_cors:
            return _preflight(request)
        check_method(method, path, probe=path in (HEALTHZ, READYZ))
        if path == HEALTHZ:
            return web.Response(text="ok\n")
        if path == READYZ:
            ready = not self.front.draining and self._core.ready()
            return web.Response(
                status=200 if ready else 503, text="ready\n" if ready else "not ready\n"
            )
        if not paths.is_api_path(path):
            raise NotFound(f"Not found: {method} {path}")
        call = parse_once(request, path)
        ref = ModelRef(call.model, call.version, call.label)
        if call.verb == "status":
            return self._status(call)
        if call.verb == "metadata":
            return self._metadata(ref)
        body = await self._read_body(request)
        deadline = time.monotonic() + self._timeout_ms / 1000
        if call.verb == "predict":
            return await self._predict(ref, body, deadline)
        return await self._classify_or_regress(call.verb, ref, body, deadline)

    # -- routes ---------------------------------------------------------------------------------
    async def _predict(self, ref: ModelRef, body: bytes, deadline: float) -> web.Response:
        request = json_request.loads(body)
        name = json_request.signature_name(request)
        formats: list[json_request.Format] = []

        def decode(signature: Signature) -> dict[str, np.ndarray]:
            inputs, fmt = json_request.predict_inputs(
                request,
                signature,
                max_elements=self._max_elements,
                max_bytes=self._max_request_bytes,
            )
            formats.append(fmt)
            return inputs

        result = await self._until(deadline, self._core.predict(ref, name, decode, (), deadline))
        try:
            return _json(json_response.predict_response(result.outputs, formats[0]))
        finally:
            result.release()  # the JSON holds copies now; the worker may reuse the space

    async def _classify_or_regress(
        self, method: str, ref: ModelRef, body: bytes, deadline: float
    ) -> web.Response:
        if self._classify_regress is None:
            raise Unimplemented(f"{method.capitalize()} is not implemented yet by tensorgate")
        request = json_request.loads(body)
        result = await self._until(deadline, self._classify_regress(method, ref, request, deadline))
        return _json(json_response.dumps(result))

    def _status(self, call: paths.RestCall) -> web.Response:
        statuses = self._core.status(call.model, call.version, call.label)
        return _json(json_response.status_body(messages.status_response(call.model, statuses)))

    def _metadata(self, ref: ModelRef) -> web.Response:
        servable, signatures = self._core.metadata(ref)
        response = messages.metadata_response(servable.model, servable.version, signatures)
        return _json(json_response.metadata_body(response))

    # -- helpers --------------------------------------------------------------------------------
    async def _read_body(self, request: web.BaseRequest) -> bytes:
        """The whole body, refused (400) as soon as it is known to exceed the limit, and (408)
        when it has not arrived within the body deadline (a stalled chunked body included)."""
        declared = request.content_length
        if declared is not None and declared > self._max_body_bytes:
            raise self._too_big(f"{declared} bytes")
        if request.version >= (1, 1) and request.headers.get("Expect", "").lower() == _CONTINUE:
            # The client (curl, for large bodies) waits for this before sending the body.
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.writer.output_size = 0
        chunks, size = [], 0
        timeout = asyncio.timeout(self._limits.body_timeout_s)
        try:
            async with timeout:
                async for chunk in request.content.iter_any():
                    size += len(chunk)
                    if size > self._max_body_bytes:
                        raise self._too_big(f"more than {self._max_body_bytes} bytes")
                    chunks.append(chunk)
        except TimeoutError:
            if not timeout.expired():
                raise
            raise HttpError(
                408,
                f"the request body was not received within {self._limits.body_timeout_s:g} s "
                "(--rest_api_body_timeout_seconds)",
            ) from None
        return b"".join(chunks)

    def _too_big(self, size: str) -> InvalidArgument:
        return InvalidArgument(
            f"Request body of {size} is over the limit of {self._max_body_bytes} bytes "
            "(--rest_api_max_body_bytes)"
        )

    async def _until(self, deadline: float, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable``, cancelled with DEADLINE_EXCEEDED when ``deadline`` passes."""
        timeout = asyncio.timeout(max(deadline - time.monotonic(), 0.0))
        try:
            async with timeout:
                return await awaitable
        except TimeoutError:
            if not timeout.expired():
                raise
            raise DeadlineExceeded(
                f"Deadline exceeded: the call took longer than {self._timeout_ms} ms "
                "(--rest_api_timeout_in_ms)"
            ) from None


def _address(address: Any) -> str:
    """An aiohttp bound address (an IPv4 or IPv6 socket name) as ``host:port``."""
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _json(body: bytes, status: int = 200) -> web.Response:
    return web.Response(status=status, body=body, content_type=JSON)


def _error(exc: ServingError) -> web.Response:
    status = http_status(exc.code)
    log.debug("REST call failed with %d: %s", status, exc.message)
    response = _json(error_body(exc.message), status)
    response[STATUS_KEY] = exc.code.name
    if status in (429, 503):
        response.headers["Retry-After"] = RETRY_AFTER_S
    return response


def _preflight(request: web.BaseRequest) -> web.Response:
    """A CORS preflight: allow the methods TF Serving allows and whichever headers are asked."""
    response = web.Response(status=200)
    asked = request.headers.get("Access-Control-Request-Headers")
    response.headers.update(CORS_HEADERS)
    if asked:
        response.headers["Access-Control-Allow-Headers"] = asked
    return response
