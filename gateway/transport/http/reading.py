"""Reading one REST connection: HTTP/1.1 parsed by llhttp (``httptools``), heads bounded as
they arrive, bodies kept on their request (:class:`RequestReader`, the base of
:class:`~.connection.HttpConnection`).

The per-request path is short on purpose (every step is a Python call per request): the parser
calls :meth:`RequestReader.on_url`, :meth:`~RequestReader.on_header` per header,
:meth:`~RequestReader.on_headers_complete` (the :class:`~.http_messages.HttpRequest` is made and
handed on), :meth:`~RequestReader.on_body` and :meth:`~RequestReader.on_message_complete`. A
request whose bytes all came in one read has its body complete before its handler runs.

- **Heads**: a request line of at most :data:`MAX_FIELD_BYTES`, each header line too, at most
  :data:`MAX_HEADERS` headers, and at most ``max_header_bytes`` of line and headers together
  (``--rest_api_max_header_bytes``), counted as they arrive, the line the parser holds
  unreported included: past either the answer is 414 or 431 ``{"error": ...}`` and the
  connection closes.
- **Framing**: llhttp's strict mode refuses every smuggling shape (``Content-Length`` with
  ``Transfer-Encoding``, two ``Content-Length``, obsolete line folding, a bare LF, NUL and other
  control bytes, a ``Transfer-Encoding`` that does not end with ``chunked``): 400, closed. An
  unknown method is 501; TLS bytes on a plain port 400.
- **Bodies**: past ``max_body_bytes`` (declared, or as a chunked body grows, or as soon as a
  chunk-size line declares more: :func:`~.chunks.declared_chunk_size`) the body's bytes are
  dropped and its handler's read is 400; a body nobody reads yet stops the reading past
  :data:`UNREAD_BODY_BYTES`.
"""

from __future__ import annotations

import asyncio
import enum

import httptools

from gateway.transport.http import chunks
from gateway.transport.http.http_messages import HttpRequest

MAX_FIELD_BYTES = 8190
"""Longest request line or header line (nginx's 8 KiB buffers less CRLF)."""
MAX_HEADERS = 128
"""Most header lines in one request."""
UNREAD_BODY_BYTES = 256 * 1024
"""Body bytes kept for a handler that has not started reading before the connection pauses."""


_NO_PARSER = httptools.HttpRequestParser(object())
"""The parser of every closed connection (it is never fed)."""


class Phase(enum.Enum):
    """What a connection is waiting for (the sweep's timeouts apply to HEAD and IDLE)."""

    HEAD = enum.auto()  # the rest of a request head (or its first byte, on a new connection)
    BUSY = enum.auto()  # its handler
    IDLE = enum.auto()  # the next request of a kept connection
    LINGER = enum.auto()  # the client's close, after the last answer (what it sends is dropped)


class HeadTooLarge(Exception):
    """A head past one of the bounds above (answered 414 or 431)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class RequestReader(asyncio.Protocol):
    """The reading half of a connection; :class:`~.connection.HttpConnection` serves what it
    reads (:meth:`_dispatch`) and answers its refusals (:meth:`_refuse`)."""

    def __init__(self, *, max_body_bytes: int, max_header_bytes: int) -> None:
        self._max_body = max_body_bytes
        self._max_head = max_header_bytes
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpRequestParser(self)
        # Answer the request that says "Connection: close", then close; bytes after it are
        # ignored rather than refused.
        self._parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self.scheme = "http"
        self.phase = Phase.HEAD
        self.since = self._loop.time()
        """``loop.time()`` when the current phase began."""
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
        self._done = False
        """Read nothing more."""

    def _stop_reading(self) -> None:
        """Read nothing more, and let the parser go (it refers back to this reader: kept, the
        pair would wait for the garbage collector)."""
        self._done = True
        self._parser = _NO_PARSER
        self._parsing = None

    # -- what the connection does with what is read ---------------------------------------------
    def _dispatch(self, request: HttpRequest) -> None:
        """Serve ``request`` (its head is complete; its body may still be arriving)."""
        raise NotImplementedError

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``{"error": message}`` with ``status`` and close."""
        raise NotImplementedError

    def _upgrade(self) -> None:
        """A ``CONNECT`` or ``Upgrade`` request was read: nothing after its head will be."""
        raise NotImplementedError

    def _pause(self) -> None:
        """Stop reading for now."""
        raise NotImplementedError

    def _log_malformed(self, what: str) -> None:
        """Count a refused request for the log."""
        raise NotImplementedError

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
        self._partial = 0
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
        self._dispatch(request)

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
        """A head is still arriving: the header line the parser holds unreported counts too
        (the last complete line, reported when the next one begins, or the unfinished one)."""
        end = len(data)
        last = data.rfind(b"\n", 0, end - 1) if data.endswith(b"\n") else data.rfind(b"\n")
        self._partial = end - last - 1 if last >= 0 else self._partial + end
        if self._partial > MAX_FIELD_BYTES or self._head_bytes + self._partial > self._max_head:
            refusal = self._too_large(self._partial)
            self._log_malformed("request head too large")
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
            self._log_malformed("chunk size over the body limit")
            self._pause()
            request.wake()

    def _malformed(self, exc: httptools.HttpParserError, data: bytes) -> None:
        cause = exc.__context__
        if isinstance(cause, HeadTooLarge):
            self._log_malformed("request head too large")
            self._refuse(cause.status, cause.message)
            return
        status, message = parser_error(exc, data)
        self._log_malformed(message)
        self._refuse(status, message)


def parser_error(exc: httptools.HttpParserError, data: bytes) -> tuple[int, str]:
    """Status and message for a request llhttp refused, never with the request's bytes."""
    if isinstance(exc, httptools.HttpParserInvalidMethodError):
        if data[:2] == b"\x16\x03":
            return 400, "TLS traffic on a plain-HTTP port"
        return 501, "the request's HTTP method is not supported"
    reason = str(exc).strip()[:120]
    return 400, f"malformed HTTP request: {reason or 'unparsable'}"
