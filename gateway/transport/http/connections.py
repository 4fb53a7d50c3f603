"""REST connections: how many, how long each may take, and the errors of the HTTP layer itself.

:func:`make_server` builds the ``web.Server`` with :class:`ConnectionLimits` in place of
aiohttp's defaults (no connection limit, an hour of keep-alive, no header deadline, plain-text
errors that echo the client's bytes):

- at most ``max_connections`` open at once: the next one gets ``503 {"error": ...}`` with
  ``Retry-After`` and is closed;
- the first request line and headers must arrive within ``header_timeout_s`` of the connection
  opening (slowloris), later ones within ``idle_timeout_s`` of the previous answer (keep-alive);
  either way the connection is closed;
- a handler dies with its connection (aiohttp's ``handler_cancellation``): a client that leaves
  frees what its request held. The body's own deadline is the server's (``body_timeout_s``);
- a chunked body whose chunk-size line declares more than ``max_body_bytes`` is answered 400
  ``{"error": ...}`` and closed as soon as that line arrives (:mod:`.chunks`), instead of holding
  the connection until the body deadline;
- a request the HTTP parser refuses (an unknown method, a line or header over 8190 bytes, more
  than 128 headers, a bad ``Content-Length``, data after ``Connection: close``...) is answered
  ``{"error": "<what is wrong>"}`` with its status (501 for a method, else 400) and never echoes
  the request's bytes; the log says so at most once a minute, with a count.

aiohttp members the REST transport uses beyond aiohttp's documented API (each checked against the
installed aiohttp by tests/transport/http/test_aiohttp_contract.py):

- ``web.RequestHandler`` subclassed (:class:`_Connection`): ``__init__(manager, *, loop, ...)``;
  overrides ``connection_made``, ``data_received``, ``connection_lost``, ``handle_error``; calls
  ``force_close``; reads ``transport``; its own attributes must not shadow aiohttp's slots;
- ``web.Server`` subclassed (:class:`_Server`): ``__call__`` (the protocol factory) overridden,
  reading the private ``Server._loop`` and ``Server._kwargs``; ``Server.connections``;
  ``Server.pre_shutdown`` and ``ServerRunner.server`` / ``addresses`` (:mod:`.server`);
- ``aiohttp.http_exceptions``: ``BadHttpMethod``, ``HttpProcessingError.message``,
  ``LineTooLong.args[1]`` (the line limit);
- ``BaseRequest.protocol`` (the connection), ``BaseRequest.writer`` and its ``output_size``
  (read here; reset to 0 by :mod:`.bounds` after writing ``100 Continue``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod, HttpProcessingError, LineTooLong

from gateway.config.settings import Settings
from gateway.transport.http.chunks import ChunkWatch
from gateway.transport.http.json_error import JSON, error_body
from gateway.transport.quiet_log import Throttled

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """Bounds of the REST surface (seconds; see the module docstring)."""

    max_connections: int = 1024
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    idle_timeout_s: float = 75.0
    max_body_bytes: int = 64 * 1024 * 1024


def rest_limits(settings: Settings) -> ConnectionLimits:
    """The ``--rest_api_*`` connection flags."""
    return ConnectionLimits(
        max_connections=settings.rest_api_max_connections,
        header_timeout_s=settings.rest_api_header_timeout_seconds,
        body_timeout_s=settings.rest_api_body_timeout_seconds,
        idle_timeout_s=settings.rest_api_idle_timeout_seconds,
        max_body_bytes=settings.rest_api_max_body_bytes,
    )


def error_response(status: int, message: str, **headers: str) -> web.Response:
    """``{"error": message}`` with ``status``; the connection closes after it."""
    response = web.Response(
        status=status, body=error_body(message), content_type=JSON, headers=headers
    )
    response.force_close()
    return response


def parser_error(exc: BaseException | None) -> tuple[int, str]:
    """Status and message for a request aiohttp's HTTP parser refused, without its bytes."""
    if isinstance(exc, BadHttpMethod):
        if "HTTPS" in str(exc):
            return 400, "TLS traffic on a plain-HTTP port"
        return 501, "the request's HTTP method is not supported"
    if isinstance(exc, LineTooLong):
        return 400, f"the request line or a header field is longer than {exc.args[1]} bytes"
    if isinstance(exc, HttpProcessingError):
        reason = str(exc.message).split(":\n", 1)[0].strip()[:120]
        return 400, f"malformed HTTP request: {reason or 'unparsable'}"
    return 500, "the request could not be handled"


class _Connection(web.RequestHandler):
    """One REST connection with the bounds above."""

    def __init__(self, server: _Server, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self._server = server
        self._limits = server.limits
        self._head_timer: asyncio.TimerHandle | None = None
        self._chunks = ChunkWatch(self._limits.max_body_bytes)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if len(self._server.connections) > self._limits.max_connections:
            self._refuse(transport)
            return
        loop = asyncio.get_running_loop()
        self._head_timer = loop.call_later(self._limits.header_timeout_s, self._head_late)

    def _refuse(self, transport: asyncio.BaseTransport) -> None:
        self._server.refused(f"over {self._limits.max_connections} open connections")
        self._answer_and_close(
            503,
            f"too many open connections (the limit is {self._limits.max_connections}); retry",
            transport,
            "Retry-After: 1\r\n",
        )

    def _answer_and_close(
        self,
        status: int,
        message: str,
        transport: asyncio.BaseTransport | None = None,
        extra_headers: str = "",
    ) -> None:
        """Write ``{"error": message}`` with ``status`` straight to the socket, then close it
        (for answers given outside any request handler)."""
        transport = transport or self.transport
        body = error_body(message)
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra_headers}Connection: close\r\n\r\n"
        )
        write = getattr(transport, "write", None)
        if write is not None:
            write(head.encode() + body)
        self.force_close()
        if transport is not None:
            transport.close()

    def data_received(self, data: bytes) -> None:
        """Hand ``data`` to aiohttp's parser unless it declares a chunk over the body limit."""
        if self._chunks.following:
            declared = self._chunks.feed(data)
            if declared is not None:
                self._server.malformed("chunk size over the body limit")
                self._answer_and_close(
                    400,
                    f"Request body of more than {self._limits.max_body_bytes} bytes is over the "
                    f"limit (a chunk declares {declared} bytes; --rest_api_max_body_bytes)",
                )
                return
        super().data_received(data)

    def head_received(self) -> None:
        """A request's line and headers arrived: the header deadline no longer applies."""
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        self._server.refused(f"request head not sent within {self._limits.header_timeout_s:g} s")
        self.force_close()
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.head_received()
        super().connection_lost(exc)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """aiohttp's hook for requests it cannot serve: JSON, no echo, a quiet log."""
        if request.writer.output_size > 0:
            raise ConnectionError("a response was already being sent")
        if exc is not None:
            status, text = parser_error(exc)
        elif status == 504:
            text = "the request took too long"
        else:
            text = "the request could not be handled"
        self._server.malformed(text)
        return error_response(status, text)


class _Server(web.Server):
    """aiohttp's server, making :class:`_Connection` connections."""

    def __init__(
        self, handler: Callable[[web.BaseRequest], Awaitable[web.StreamResponse]], **kwargs: Any
    ) -> None:
        self.limits: ConnectionLimits = kwargs.pop("limits")
        super().__init__(handler, **kwargs)
        self.refused = Throttled(log, "REST connections closed", level=logging.INFO)
        self.malformed = Throttled(log, "malformed HTTP requests answered", level=logging.INFO)

    def __call__(self) -> _Connection:
        return _Connection(self, loop=self._loop, **self._kwargs)


def make_server(
    handler: Callable[[web.BaseRequest], Awaitable[web.StreamResponse]], limits: ConnectionLimits
) -> web.Server:
    """The REST ``web.Server`` for ``handler`` with ``limits``."""
    return _Server(
        handler,
        limits=limits,
        handler_cancellation=True,
        access_log=None,
        keepalive_timeout=limits.idle_timeout_s,
        lingering_time=0,
    )


def note_request(request: web.BaseRequest) -> None:
    """Tell the connection its request head arrived (stops the header deadline)."""
    protocol = request.protocol
    if isinstance(protocol, _Connection):
        protocol.head_received()
