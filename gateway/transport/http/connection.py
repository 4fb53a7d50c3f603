"""One REST connection: HTTP/1.1 parsed by llhttp (``httptools``), requests served in order.

The per-request path is short on purpose (every step is a Python call per request): the parser
calls :meth:`HttpConnection.on_url`, :meth:`~HttpConnection.on_header` per header,
:meth:`~HttpConnection.on_headers_complete` (the :class:`~.messages.HttpRequest` is made and
its task started), :meth:`~HttpConnection.on_body` and
:meth:`~HttpConnection.on_message_complete`; the task awaits the server's handler and writes the
answer with one ``transport.write``. A request whose bytes all came in one read finds its body
complete when its handler runs.

What a connection may do (the numbers are :class:`~.connections.ConnectionLimits`):

- **Heads**: a request line of at most :data:`MAX_FIELD_BYTES`, each header line too, at most
  :data:`MAX_HEADERS` headers, and at most ``max_header_bytes`` of line and headers together
  (``--rest_api_max_header_bytes``), counted as they arrive, a partial line included: past
  either the answer is 414 or 431 ``{"error": ...}`` and the connection closes. A head must be
  whole within ``header_timeout_s`` of its first byte (of the connection's opening for the
  first); between requests a connection may stay ``idle_timeout_s`` (the sweep of
  :mod:`~.connections` closes it).
- **Framing**: llhttp's strict mode refuses every smuggling shape (``Content-Length`` with
  ``Transfer-Encoding``, two ``Content-Length``, obsolete line folding, a bare LF, NUL and other
  control bytes, a ``Transfer-Encoding`` that does not end with ``chunked``): 400, closed. An
  unknown method is 501; TLS bytes on a plain port 400.
- **Bodies**: past ``max_body_bytes`` (declared, or as a chunked body grows, or as soon as a
  chunk-size line declares more: :func:`~.chunks.declared_chunk_size`) the body's bytes are
  dropped and its handler's read is 400; a body nobody reads yet stops the reading past
  :data:`UNREAD_BODY_BYTES`. An answer sent before its body ended closes the connection.
- **Order**: pipelined requests are answered in order, one at a time; while one is served, the
  next heads wait and reading pauses. A connection whose client does not take the answer
  (writing paused) serves nothing more, and is aborted after ``write_timeout_s``.
- **Lifetime**: a handler is cancelled when its connection is lost (its in-flight work freed).
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from typing import TYPE_CHECKING

import httptools

from gateway.transport.http import chunks
from gateway.transport.http.json_error import error_body
from gateway.transport.http.messages import HttpRequest, HttpResponse, head

if TYPE_CHECKING:
    from gateway.transport.http.connections import Connections

MAX_FIELD_BYTES = 8190
"""Longest request line or header line (aiohttp's and nginx's 8 KiB buffers less CRLF)."""
MAX_HEADERS = 128
"""Most header lines in one request."""
UNREAD_BODY_BYTES = 256 * 1024
"""Body bytes kept for a handler that has not started reading before the connection pauses."""


class Phase(enum.Enum):
    """What a connection is waiting for (the sweep's timeouts apply to HEAD and IDLE)."""

    HEAD = enum.auto()  # the rest of a request head (or its first byte, on a new connection)
    BUSY = enum.auto()  # its handler
    IDLE = enum.auto()  # the next request of a kept connection


class HeadTooLarge(Exception):
    """A head past one of the bounds above (answered 414 or 431)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class HttpConnection(asyncio.Protocol):
    """One client connection of an :class:`~.server.HttpServer` (see the module doc)."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        limits = connections.limits
        self._max_body = limits.max_body_bytes
        self._max_head = limits.max_header_bytes
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpRequestParser(self)
        # Answer the request that says "Connection: close", then close; bytes after it are
        # ignored rather than refused.
        self._parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.scheme = "http"
        self.phase = Phase.HEAD
        self.since = self._loop.time()
        """``loop.time()`` when the current phase began."""
        self.write_blocked_since: float | None = None
        """``loop.time()`` since when the client has taken none of the bytes waiting to be sent
        (None: the transport takes writes)."""
        self._unsent = 0
        # The head being parsed.
        self._url = b""
        self._headers: dict[str, str] = {}
        self._head_bytes = 0
        self._header_count = 0
        self._heading = False
        self._partial = 0
        # The request whose body is arriving, and chunked framing.
        self._parsing: HttpRequest | None = None
        self._chunk_start = -1
        self._chunk_here = False
        # Requests served.
        self._current: HttpRequest | None = None
        self._queue: deque[HttpRequest] = deque()
        self._task: asyncio.Task[None] | None = None
        self._reading = True
        self._writable: asyncio.Future[None] | None = None
        self._closing = False
        """Serve nothing after what is in hand."""
        self._done = False
        """Read nothing more."""
        self._pending_error: HttpResponse | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if transport.get_extra_info("sslcontext") is not None:
            self.scheme = "https"
        refusal = self._connections.admit(self)
        if refusal is not None:
            self.answer_and_close(503, refusal, {"Retry-After": "1"})

    def connection_lost(self, exc: BaseException | None) -> None:
        self._connections.forget(self)
        self.transport = None
        self._closing = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()  # a handler dies with its connection: what it holds is freed
        for request in (self._parsing, self._current):
            if request is not None:
                request.wake()
        writable = self._writable
        if writable is not None and not writable.done():
            writable.set_result(None)

    def eof_received(self) -> bool:
        """The client will send nothing more: answer what it asked, then close."""
        self._closing = True
        return self._current is not None

    def pause_writing(self) -> None:
        self.write_blocked_since = self._loop.time()
        self._unsent = self._buffered()

    def resume_writing(self) -> None:
        self.write_blocked_since = None
        writable = self._writable
        if writable is not None:
            self._writable = None
            if not writable.done():
                writable.set_result(None)

    def taken_since(self, now: float) -> float | None:
        """Since when (``loop.time()``) the client has taken none of the answer bytes waiting to
        be sent, None when nothing waits; ``now``: the time of this look."""
        blocked = self.write_blocked_since
        if blocked is None:
            return None
        unsent = self._buffered()
        if unsent < self._unsent:  # the client read some: the clock starts again
            self._unsent = unsent
            self.write_blocked_since = blocked = now
        return blocked

    def _buffered(self) -> int:
        transport = self.transport
        return 0 if transport is None else transport.get_write_buffer_size()

    def data_received(self, data: bytes) -> None:
        if self._done:
            return
        if self.phase is Phase.IDLE:
            self.phase, self.since = Phase.HEAD, self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._upgrade()
        except httptools.HttpParserError as exc:
            self._malformed(exc, data)
            return
        if self._heading:
            self._bound_partial_head(data)
        elif self._chunk_here:
            self._check_chunk(data)

    # -- parser callbacks -----------------------------------------------------------------------
    def on_url(self, url: bytes) -> None:
        self._heading = True
        self._url += url
        if len(self._url) > MAX_FIELD_BYTES:
            raise HeadTooLarge(414, f"the request target is longer than {MAX_FIELD_BYTES} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        size = len(name) + len(value)
        self._head_bytes += size + 4
        self._header_count += 1
        if (
            size > MAX_FIELD_BYTES
            or self._header_count > MAX_HEADERS
            or self._head_bytes > self._max_head
        ):
            raise self._too_large(size)
        key = name.decode("latin-1").lower()
        headers = self._headers
        if key in headers:
            headers[key] += ", " + value.decode("latin-1")
        else:
            headers[key] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        parser = self._parser
        request = HttpRequest(
            self,
            parser.get_method().decode("ascii"),
            self._url,
            parser.get_http_version(),
            self._headers,
            scheme=self.scheme,
            keep_alive=parser.should_keep_alive(),
        )
        self._url, self._headers = b"", {}
        self._head_bytes = self._header_count = self._partial = 0
        self._heading = False
        self._parsing = request
        if request.content_length is not None and request.content_length > self._max_body:
            request.over_limit = True
        if self._current is None and not self._closing:
            self._current = request
            self.phase = Phase.BUSY
            self._connections.waiting.pop(self, None)
            self._task = self._loop.create_task(self._serve(request))
        elif not self._closing:
            self._queue.append(request)
            self._pause()

    def on_body(self, body: bytes) -> None:
        request = self._parsing
        if request is None:
            return
        request.size += len(body)
        if request.size > self._max_body:
            request.over_limit = True
            request.chunks = []
        elif not request.over_limit:
            request.chunks.append(body)
        if request.waiter is not None:
            request.wake()
        elif request.size > UNREAD_BODY_BYTES and not request.read_started:
            self._pause()

    def on_message_complete(self) -> None:
        request = self._parsing
        if request is not None:
            self._parsing = None
            request.complete = True
            if request.waiter is not None:
                request.wake()
        self._chunk_start, self._chunk_here = -1, False

    def on_chunk_header(self) -> None:
        request = self._parsing
        self._chunk_start = -1 if request is None else request.size
        self._chunk_here = True

    def on_chunk_complete(self) -> None:
        self._chunk_start, self._chunk_here = -1, False

    # -- serving --------------------------------------------------------------------------------
    async def _serve(self, request: HttpRequest) -> None:
        """Answer ``request``, then each request queued behind it, in order."""
        connections = self._connections
        while True:
            response = await connections.handle(request)
            transport = self.transport
            if transport is None:
                return
            keep = (
                request.keep_alive
                and request.complete
                and not response.close
                and not request.refused
                and not self._closing
                and not connections.closing
            )
            body = response.body
            first = head(response, connections.date, keep, connections.extra_headers)
            if request.method == "HEAD" or not body:
                transport.write(first)
            elif len(body) < 65536:
                transport.write(first + body)
            else:
                transport.writelines((first, body))
            if not keep:
                self._close_after_answers()
                return
            if self.write_blocked_since is not None:
                await self._drained()
                if self.transport is None:
                    return
            if not self._queue:
                self._current = self._task = None
                self._resume()
                self.phase, self.since = Phase.IDLE, self._loop.time()
                connections.waiting[self] = None
                return
            request = self._queue.popleft()
            self._current = request
            if not self._queue:
                self._resume()

    async def _drained(self) -> None:
        self._writable = self._loop.create_future()
        await self._writable

    def _close_after_answers(self) -> None:
        self._closing = self._done = True
        self._current = self._task = None
        self._queue.clear()
        transport = self.transport
        if transport is not None:
            error = self._pending_error
            if error is not None:
                self._pending_error = None
                transport.write(head(error, self._connections.date, False) + error.body)
            transport.close()

    def want_body(self, request: HttpRequest) -> None:
        """A handler waits for ``request``'s body: read on."""
        if request is self._parsing and not self._queue:
            self._resume()

    def send_continue(self, request: HttpRequest) -> None:
        """``100 Continue`` for ``request``, if its body has not started (the client waits)."""
        if self.transport is not None and request is self._parsing and not request.size:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _pause(self) -> None:
        if self._reading and self.transport is not None:
            self._reading = False
            self.transport.pause_reading()

    def _resume(self) -> None:
        if not self._reading and self.transport is not None and not self._closing:
            self._reading = True
            self.transport.resume_reading()

    # -- refusals -----------------------------------------------------------------------------
    def _too_large(self, size: int) -> HeadTooLarge:
        if size > MAX_FIELD_BYTES:
            return HeadTooLarge(431, f"a header line is longer than {MAX_FIELD_BYTES} bytes")
        if self._header_count > MAX_HEADERS:
            return HeadTooLarge(431, f"the request has more than {MAX_HEADERS} headers")
        return HeadTooLarge(
            431,
            f"the request's headers are larger than {self._max_head} bytes "
            "(--rest_api_max_header_bytes)",
        )

    def _bound_partial_head(self, data: bytes) -> None:
        """A head is still arriving: the bytes of its unfinished line count too."""
        newline = data.rfind(b"\n")
        self._partial = len(data) - newline - 1 if newline >= 0 else self._partial + len(data)
        if self._partial > MAX_FIELD_BYTES or self._head_bytes + self._partial > self._max_head:
            refusal = self._too_large(self._partial)
            self._connections.malformed("request head too large")
            self._refuse(refusal.status, refusal.message)

    def _check_chunk(self, data: bytes) -> None:
        """A chunk of the body being read has begun in ``data`` and not ended: refuse it now if
        its declared size takes the body past the limit."""
        self._chunk_here = False
        request = self._parsing
        if request is None or self._chunk_start < 0 or request.over_limit:
            return
        received = request.size - self._chunk_start
        declared = chunks.declared_chunk_size(data, received)
        if declared is not None and self._chunk_start + declared > self._max_body:
            request.over_limit = True
            request.chunks = []
            request.declared_chunk = declared
            self._connections.malformed("chunk size over the body limit")
            self._pause()
            request.wake()

    def _upgrade(self) -> None:
        """``CONNECT`` or ``Upgrade``: the request is answered as any other, then the connection
        closes (nothing is upgraded); bytes after its head are not read."""
        self._closing = self._done = True
        self._pause()
        if self._current is None:
            self._close_after_answers()

    def _malformed(self, exc: httptools.HttpParserError, data: bytes) -> None:
        cause = exc.__context__
        if isinstance(cause, HeadTooLarge):
            self._connections.malformed("request head too large")
            self._refuse(cause.status, cause.message)
            return
        status, message = parser_error(exc, data)
        self._connections.malformed(message)
        self._refuse(status, message)

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``{"error": message}`` once the requests before it are answered, then close;
        a request whose body it breaks is answered with it instead."""
        self._closing = self._done = True
        self._pause()
        parsing = self._parsing
        if parsing is not None and parsing is self._current:
            parsing.broken = message
            parsing.wake()
        elif self._current is None:
            self.answer_and_close(status, message)
        else:
            self._pending_error = HttpResponse(status, error_body(message))

    def answer_and_close(
        self, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        """Write ``{"error": message}`` with ``status`` outside any handler, then close."""
        self._closing = self._done = True
        transport = self.transport
        if transport is None:
            return
        response = HttpResponse(status, error_body(message), headers=headers)
        transport.write(head(response, self._connections.date, False) + response.body)
        transport.close()

    def drop(self) -> None:
        """Close now (the connection was idle: no answer is lost)."""
        self._closing = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        """Close now without flushing what is written (its client does not read)."""
        self._closing = True
        if self.transport is not None:
            self.transport.abort()


def parser_error(exc: httptools.HttpParserError, data: bytes) -> tuple[int, str]:
    """Status and message for a request llhttp refused, never with the request's bytes."""
    if isinstance(exc, httptools.HttpParserInvalidMethodError):
        if data[:2] == b"\x16\x03":
            return 400, "TLS traffic on a plain-HTTP port"
        return 501, "the request's HTTP method is not supported"
    reason = str(exc).strip()[:120]
    return 400, f"malformed HTTP request: {reason or 'unparsable'}"
