"""REST connections: how many, from whom, and how long each may wait.

:class:`Connections` keeps every open :class:`~.connection.Connection` of one server, with
:class:`ConnectionLimits`:

- at most ``max_connections`` open at once. A new connection past it takes the place of the
  connection that has waited longest without a request in hand (idle between requests, or not
  yet done sending a head), which is closed: no answer is lost, and clients that merely hold
  connections cannot keep new ones out. Only when every connection is serving a request is the
  new one answered ``503 {"error": ...}`` with ``Retry-After`` and closed;
- at most ``max_per_peer`` from one IP address (0: no bound; behind a proxy every client shares
  its address); the next one from that address is answered 503 and closed;
- a head must be whole within ``header_timeout_s`` of its first byte (of the connection's
  opening, for the first request), and a kept connection may wait ``idle_timeout_s`` for its
  next request; an answer the client does not take within ``write_timeout_s`` aborts the
  connection. A sweep every :func:`sweep_interval` enforces all three, and keeps the ``Date``
  line of the answers (one clock read per second, not per answer).

Events are logged at most once a minute with a count
(:class:`~gateway.transport.quiet_log.Throttled`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate
from typing import Protocol

from gateway.config.settings import Settings
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.reading import Phase
from gateway.transport.quiet_log import Throttled

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """Bounds of the REST surface (seconds, bytes; see the module docstring and
    :mod:`~.connection`)."""

    max_connections: int = 1024
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    idle_timeout_s: float = 75.0
    max_body_bytes: int = 64 * 1024 * 1024
    max_header_bytes: int = 32 * 1024
    write_timeout_s: float = 30.0
    max_per_peer: int = 0


def rest_limits(settings: Settings) -> ConnectionLimits:
    """The ``--rest_api_*`` connection flags."""
    return ConnectionLimits(
        max_connections=settings.rest_api_max_connections,
        header_timeout_s=settings.rest_api_header_timeout_seconds,
        body_timeout_s=settings.rest_api_body_timeout_seconds,
        idle_timeout_s=settings.rest_api_idle_timeout_seconds,
        max_body_bytes=settings.rest_api_max_body_bytes,
        max_header_bytes=settings.rest_api_max_header_bytes,
        write_timeout_s=settings.rest_api_write_timeout_seconds,
        max_per_peer=settings.rest_api_max_connections_per_peer,
    )


def sweep_interval(limits: ConnectionLimits) -> float:
    """Seconds between two sweeps: a quarter of the shortest timeout, at most one second."""
    shortest = min(limits.header_timeout_s, limits.idle_timeout_s, limits.write_timeout_s)
    return max(min(shortest / 4, 1.0), 0.005)


def date_line() -> bytes:
    """The ``Date`` header line of an answer sent now."""
    return b"Date: " + formatdate(usegmt=True).encode("ascii") + b"\r\n"


class Connection(Protocol):
    """What :class:`Connections` sees of one connection (:class:`~.connection.Connection`)."""

    peer: str
    phase: Phase
    since: float

    def taken_since(self, now: float) -> float | None: ...

    def drop(self) -> None: ...

    def abort(self) -> None: ...


class Connections:
    """The open connections of one server and its bounds (see the module doc).

    ``handle``: answers one request (never raises). ``extra_headers``: header lines every answer
    carries (CORS).
    """

    def __init__(
        self,
        limits: ConnectionLimits,
        handle: Callable[[HttpRequest], Awaitable[HttpResponse]],
        extra_headers: bytes = b"",
    ) -> None:
        self.limits = limits
        self.handle = handle
        self.extra_headers = extra_headers
        self.date = date_line()
        self.closing = False
        """Answers say ``Connection: close`` (the server stops)."""
        self.open: set[Connection] = set()
        self.waiting: dict[Connection, None] = {}
        """The connections without a request in hand, longest waiting first."""
        self._peers: dict[str, int] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self.refused = Throttled(log, "REST connections closed", level=logging.INFO)
        self.malformed = Throttled(log, "malformed HTTP requests answered", level=logging.INFO)

    def admit(self, connection: Connection) -> str | None:
        """Count ``connection`` in, making room past the cap; why it is refused, else None."""
        limits = self.limits
        peer = connection.peer
        if limits.max_per_peer and self._peers.get(peer, 0) >= limits.max_per_peer:
            self.refused(f"over {limits.max_per_peer} connections from one address")
            return (
                f"too many open connections from this address (the limit is "
                f"{limits.max_per_peer}: --rest_api_max_connections_per_peer); retry"
            )
        if len(self.open) >= limits.max_connections:
            if not self.waiting:
                self.refused(f"over {limits.max_connections} open connections, all busy")
                return (
                    f"too many open connections (the limit is {limits.max_connections}, all "
                    "serving requests); retry"
                )
            oldest = next(iter(self.waiting))
            self.forget(oldest)
            oldest.drop()
            self.refused(f"oldest waiting connection closed for a new one (cap {len(self.open)})")
        self.open.add(connection)
        self.waiting[connection] = None
        self._peers[peer] = self._peers.get(peer, 0) + 1
        return None

    def forget(self, connection: Connection) -> None:
        """``connection`` is closed."""
        if connection not in self.open:
            return
        self.open.discard(connection)
        self.waiting.pop(connection, None)
        left = self._peers.get(connection.peer, 1) - 1
        if left:
            self._peers[connection.peer] = left
        else:
            self._peers.pop(connection.peer, None)

    # -- the sweep ------------------------------------------------------------------------------
    def start(self) -> None:
        """Sweep every :func:`sweep_interval` from now on (on the running loop)."""
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().call_later(
                sweep_interval(self.limits), self._tick
            )

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        self._sweeper = loop.call_later(sweep_interval(self.limits), self._tick)
        self.date = date_line()
        self.sweep(loop.time())

    def sweep(self, now: float) -> None:
        """Close the connections past a timeout at ``now`` (``loop.time()`` seconds)."""
        limits = self.limits
        for connection in list(self.open):
            waited = now - connection.since
            blocked = connection.taken_since(now)
            if blocked is not None and now - blocked > limits.write_timeout_s:
                self.refused(f"answer not taken within {limits.write_timeout_s:g} s")
                self.forget(connection)
                connection.abort()
            elif connection.phase is Phase.LINGER and waited > limits.header_timeout_s:
                self.forget(connection)
                connection.drop()
            elif connection.phase is Phase.HEAD and waited > limits.header_timeout_s:
                self.refused(f"request head not sent within {limits.header_timeout_s:g} s")
                self.forget(connection)
                connection.drop()
            elif connection.phase is Phase.IDLE and waited > limits.idle_timeout_s:
                self.forget(connection)
                connection.drop()

    # -- stop -----------------------------------------------------------------------------------
    def close_waiting(self) -> None:
        """From now on answers close their connections; those without a request close now."""
        self.closing = True
        for connection in list(self.waiting):
            self.forget(connection)
            connection.drop()

    def close_all(self) -> None:
        """Stop sweeping and abort every connection (their handlers are cancelled)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for connection in list(self.open):
            self.forget(connection)
            connection.abort()
