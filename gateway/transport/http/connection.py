"""One REST connection: requests read (:class:`~.reading.RequestReader`) and served in order.

Each request's task awaits the server's handler and writes the answer with one
``transport.write`` of the head (:func:`~.http_messages.head`) and the body.

- **Order**: pipelined requests are answered in order, one at a time; while one is served, the
  next heads wait and reading pauses. A connection whose client does not take the answer
  (writing paused) serves nothing more, and is aborted after ``write_timeout_s`` without a
  byte taken (the sweep of :mod:`~.connections`, as for the header and idle timeouts).
- **Closing**: an answer sent before its body ended, a refusal, ``Connection: close``, a
  ``CONNECT`` or ``Upgrade`` close the connection after the answer: a FIN first, what the client
  still sends is dropped until it closes (a lingering close, so that its unread bytes do not
  reset the connection before it reads the answer).
- **Lifetime**: a handler is cancelled when its connection is lost (its in-flight work freed).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from gateway.transport.http.connections import Connections
from gateway.transport.http.http_messages import HttpRequest, HttpResponse, head
from gateway.transport.http.json_error import error_body
from gateway.transport.http.reading import Phase, RequestReader

log = logging.getLogger(__name__)


class HttpConnection(RequestReader):
    """One client connection of an :class:`~.server.HttpServer` (see the module doc)."""

    def __init__(self, connections: Connections) -> None:
        limits = connections.limits
        super().__init__(
            max_body_bytes=limits.max_body_bytes, max_header_bytes=limits.max_header_bytes
        )
        self._connections = connections
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.write_blocked_since: float | None = None
        """``loop.time()`` since when the client has taken none of the bytes waiting to be sent
        (None: the transport takes writes)."""
        self._unsent = 0
        self._current: HttpRequest | None = None
        self._queue: deque[HttpRequest] = deque()
        self._task: asyncio.Task[None] | None = None
        self._reading = True
        self._writable: asyncio.Future[None] | None = None
        self._closing = False
        """Serve nothing after what is in hand."""
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
            self.answer_and_close(503, refusal, {"Retry-After": "1"}, linger=False)

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
        self._stop_reading()
        writable = self._writable
        if writable is not None and not writable.done():
            writable.set_result(None)

    def eof_received(self) -> bool:
        """The client will send nothing more: answer what it asked whole, then close (at once
        when nothing is asked, or a body can no longer end)."""
        self._closing = True
        return (
            self._current is not None and self._parsing is None and self.phase is not Phase.LINGER
        )

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

    # -- serving --------------------------------------------------------------------------------
    def _dispatch(self, request: HttpRequest) -> None:
        if self._current is None and not self._closing:
            self._current = request
            self.phase = Phase.BUSY
            self._connections.waiting.pop(self, None)
            self._task = self._loop.create_task(self._serve(request))
        elif not self._closing:
            self._queue.append(request)
            self._pause()

    def _log_malformed(self, what: str) -> None:
        self._connections.malformed(what)

    async def _serve(self, request: HttpRequest) -> None:
        """Answer ``request``, then each request queued behind it, in order."""
        connections = self._connections
        try:
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
                    if not self._reading:
                        self._resume()
                    self.phase, self.since = Phase.IDLE, self._loop.time()
                    connections.waiting[self] = None
                    return
                request = self._queue.popleft()
                self._current = request
                if not self._queue:
                    self._resume()
        except Exception:  # a fault of ours: this connection ends, the server goes on
            log.exception("REST connection failed answering %s", request.method)
            self.abort()

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
            self._linger(transport)

    def _linger(self, transport: asyncio.Transport) -> None:
        """Close after the last answer: send it and a FIN, then read on and drop what comes
        until the client closes (or for ``header_timeout_s``), so that bytes it was still
        sending do not make the kernel reset the connection before the answer is read."""
        if not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        self.phase, self.since = Phase.LINGER, self._loop.time()
        self._connections.waiting.pop(self, None)
        if not self._reading:
            self._reading = True
            transport.resume_reading()

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
    def _upgrade(self) -> None:
        """``CONNECT`` or ``Upgrade``: the request is answered as any other, then the connection
        closes (nothing is upgraded); bytes after its head are not read."""
        self._closing = self._done = True
        self._pause()
        if self._current is None:
            self._close_after_answers()

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
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        *,
        linger: bool = True,
    ) -> None:
        """Write ``{"error": message}`` with ``status`` outside any handler, then close
        (``linger``: as :meth:`_linger` does; a connection never counted in closes at once)."""
        self._closing = self._done = True
        transport = self.transport
        if transport is None:
            return
        response = HttpResponse(status, error_body(message), headers=headers)
        transport.write(head(response, self._connections.date, False) + response.body)
        if linger:
            self._linger(transport)
        else:
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
