"""One HTTP/1.1 request and its answer, as the REST server hands them to routes and hooks.

:class:`HttpRequest` is what the connection (:mod:`~gateway.transport.http.connection`) parsed:
the method, the raw path and query, the headers (names in lower case, values as sent, latin-1),
the body as it arrives, and whether the connection may be kept. Handlers read the body through
:meth:`~gateway.transport.http.bounds.CallBounds.read_body` (size limit, deadline, the in-flight
budget), never from here.

:class:`HttpResponse` is a whole answer: status, body bytes, content type and any other headers.
The connection writes it with one ``transport.write`` of the head it renders (:func:`head`) and
the body; ``Content-Length`` and ``Date`` are the connection's, never a handler's.
"""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from typing import Any, Final

JSON: Final = "application/json"
TEXT: Final = "text/plain; charset=utf-8"

STATUS_LINES: Final = {
    int(s): f"HTTP/1.1 {int(s)} {s.phrase}\r\n".encode("ascii") for s in HTTPStatus
} | {499: b"HTTP/1.1 499 Client Closed Request\r\n"}
"""The status line of every status the server may answer (499: a call the client left)."""
_CONTENT_TYPES: dict[str, bytes] = {}
"""``Content-Type`` header lines already encoded, by content type."""


class HttpResponse:
    """A whole answer. ``code``: the canonical code name (``"NOT_FOUND"``) of a failed call, for
    observability. ``close``: the connection closes after it."""

    __slots__ = ("body", "close", "code", "content_type", "headers", "status")

    def __init__(
        self,
        status: int = 200,
        body: bytes = b"",
        content_type: str | None = JSON,
        headers: dict[str, str] | None = None,
        code: str | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers
        self.code = code
        self.close = False

    def set_header(self, name: str, value: str) -> None:
        """Add (or replace) the header ``name`` (neither may hold CR or LF)."""
        if self.headers is None:
            self.headers = {name: value}
        else:
            self.headers[name] = value


def head(response: HttpResponse, date: bytes, keep_alive: bool, extra: bytes = b"") -> bytes:
    """The status line and headers of ``response`` (``date``: the ``Date`` line; ``extra``:
    header lines every answer of the server carries, CORS's)."""
    lines = [STATUS_LINES.get(response.status) or b"HTTP/1.1 %d \r\n" % response.status, date]
    content_type = response.content_type
    if content_type is not None:
        line = _CONTENT_TYPES.get(content_type)
        if line is None:
            line = _CONTENT_TYPES[content_type] = f"Content-Type: {content_type}\r\n".encode()
        lines.append(line)
    if response.headers:
        lines.extend(f"{k}: {v}\r\n".encode("latin-1") for k, v in response.headers.items())
    if extra:
        lines.append(extra)
    lines.append(b"Content-Length: %d\r\n" % len(response.body))
    lines.append(b"\r\n" if keep_alive else b"Connection: close\r\n\r\n")
    return b"".join(lines)


class HttpRequest:
    """One request: its line and headers (set by the connection once they are complete) and
    its body as it arrives.

    ``method``: ``"POST"``, ... ``path``: the raw (percent-encoded) path, without the query.
    ``query``: what followed ``?`` ("" if nothing). ``version``: ``"1.1"``, ``"1.0"``.
    ``headers``: lower-case names → values (a repeated header's values joined with ``", "``).
    ``content_length``: the declared body size (None: chunked or no body). ``scheme``:
    ``"http"`` or ``"https"``. ``keep_alive``: the client keeps the connection after the answer.
    """

    __slots__ = (
        "_connection",
        "broken",
        "chunks",
        "complete",
        "content_length",
        "declared_chunk",
        "headers",
        "held",
        "keep_alive",
        "method",
        "over_limit",
        "path",
        "query",
        "read_started",
        "refused",
        "scheme",
        "size",
        "version",
        "waiter",
    )

    def __init__(
        self,
        connection: Any,
        method: str,
        url: bytes,
        version: str,
        headers: dict[str, str],
        *,
        scheme: str = "http",
        keep_alive: bool = True,
    ) -> None:
        path, _, query = url.decode("latin-1").partition("?")
        self.method = method
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        length = headers.get("content-length")
        self.content_length = int(length) if length is not None else None
        self.scheme = scheme
        self.keep_alive = keep_alive
        self.chunks: list[bytes] = []
        self.size = 0
        """Body bytes received (those over the limit included)."""
        self.complete = False
        """The whole body has arrived."""
        self.over_limit = False
        """The body is larger than the server takes: its bytes are dropped as they arrive."""
        self.read_started = False
        """A handler reads the body (it is then not paused for)."""
        self.held = 0
        """Bytes of the in-flight budget the body holds (:mod:`~gateway.transport.http.bounds`)."""
        self.refused = False
        """The budget refused the body (its connection closes after the answer)."""
        self.declared_chunk: int | None = None
        """The size a chunk declared that took the body over the limit (None: none did)."""
        self.broken: str | None = None
        """Why the body's framing could not be read (the connection closes), else None."""
        self.waiter: asyncio.Future[None] | None = None
        """What :meth:`more` awaits, until the connection wakes it."""
        self._connection = connection

    def header(self, name: str) -> str | None:
        """The value of the header ``name`` (any case), None when absent."""
        return self.headers.get(name.lower())

    # -- the body, fed by the connection ------------------------------------------------------
    def body(self) -> bytes:
        """The body received so far, in one piece."""
        chunks = self.chunks
        if len(chunks) == 1:
            return chunks[0]
        joined = b"".join(chunks)
        self.chunks = [joined] if joined else []
        return joined

    def wake(self) -> None:
        """More of the body (or its end, or its refusal) arrived: the reader waiting goes on."""
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def more(self) -> None:
        """Return once more of the body (or its end) has arrived; the connection reads on."""
        if self.complete or self.over_limit or self.broken is not None:
            return
        self.read_started = True
        self.waiter = asyncio.get_running_loop().create_future()
        self._connection.want_body(self)
        await self.waiter

    def send_continue(self) -> None:
        """Answer ``Expect: 100-continue`` (the client waits for it before sending the body)."""
        self._connection.send_continue(self)
