"""Draining on SIGTERM/SIGINT: nothing accepted is lost, nothing new is taken.

The contract, in order (:func:`drain`):

1. Readiness goes at once: grpc.health.v1 answers NOT_SERVING for every service name and REST
   ``/readyz`` 503, so load balancers stop sending.
2. New calls are refused with UNAVAILABLE (REST 503 with ``Retry-After``) while the listeners stay
   open: a client that already holds a connection gets a retryable answer, not a reset or a
   CANCELLED (grpc.aio's ``server.stop(grace)`` cancels pending calls and closes the listeners).
3. Calls already running finish, for at most ``grace_s`` seconds, or until ``hurry`` is set (a
   second signal); then the listeners stay open, refusing, until calls stop arriving for
   ``quiet_s`` (clients that still hold a connection learn to go elsewhere), within the grace.
4. Only then do the servers stop (:func:`shut_down`; whatever still runs is cancelled); the
   caller stops the workers. The refusals are first *held* (grpc cancels a call that has not
   reached its handler at shutdown, ``ZombifyPending``): once no call has arrived for
   :data:`HOLD_QUIET_S` every arrived call is in a handler; the shutdown then begins (GOAWAY),
   and only then — with several front ends on the ports, once all have begun theirs
   (``together``) — are the held refusals answered, within the shutdown's grace.

:class:`Signals` turns the first signal into a stop request and the second into ``hurry``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


QUIET_S = 1.0
"""Seconds without a new call after which a drained server stops listening."""
HOLD_S = 2.0
"""At most this long, refusals are held before the servers stop (:func:`shut_down`)."""
HOLD_QUIET_S = 0.2
"""Held refusals: seconds without a new call after which every arrived call is in a handler."""
QUIET_POLL_S = 0.02
"""How often the hold looks for new arrivals (see :func:`_quiet`)."""


class Surface(Protocol):
    """A server that can refuse new calls and tell when the running ones are done."""

    @property
    def last_arrival(self) -> float:
        """``time.monotonic()`` of the latest call's arrival (0 if none)."""
        ...

    def start_draining(self) -> None: ...

    async def wait_idle(self) -> None: ...


class Holding(Protocol):
    """A server whose refusals can be held (:class:`gateway.transport.gate.Gate`)."""

    @property
    def last_arrival(self) -> float: ...

    def hold_refusals(self) -> None: ...

    def release_refusals(self) -> None: ...


class Signals:
    """SIGTERM/SIGINT handlers on the running loop: they only set events (a handler must not do
    work). ``stop`` is set by the first signal, ``hurry`` by the second."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.hurry = asyncio.Event()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self.received)

    def received(self) -> None:
        if self.stop.is_set():
            if not self.hurry.is_set():
                log.warning("second stop signal: not waiting for calls in progress")
            self.hurry.set()
        else:
            log.info("stop signal: draining")
            self.stop.set()


async def drain(
    surfaces: list[Surface],
    *,
    not_ready: Callable[[], Awaitable[None]],
    grace_s: float,
    hurry: asyncio.Event,
    quiet_s: float = QUIET_S,
) -> bool:
    """Steps 1–3 above; True when every running call finished in time.

    Once nothing runs, the listeners stay open (refusing) until no call has arrived for
    ``quiet_s`` seconds — clients still sending on open connections get UNAVAILABLE, not a reset —
    but never past ``grace_s`` in all.
    """
    end = time.monotonic() + grace_s
    await not_ready()
    for surface in surfaces:
        surface.start_draining()
    idle: asyncio.Future[Any] = asyncio.ensure_future(
        asyncio.gather(*(s.wait_idle() for s in surfaces))
    )
    hurried: asyncio.Future[Any] = asyncio.ensure_future(hurry.wait())
    try:
        done, _ = await asyncio.wait(
            {idle, hurried}, timeout=grace_s, return_when=asyncio.FIRST_COMPLETED
        )
        finished = idle in done
        while finished and not hurry.is_set():
            last = max((s.last_arrival for s in surfaces), default=0.0)
            wait_s = min(last + quiet_s, end) - time.monotonic()
            if wait_s <= 0:
                break
            await asyncio.wait({hurried}, timeout=wait_s)
    finally:
        for task in (idle, hurried):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if not finished:
        log.warning("calls still running after the drain (%.1f s or a second signal)", grace_s)
    return finished


async def shut_down(
    holding: Holding | None,
    stops: list[Awaitable[Any]],
    *,
    hurry: asyncio.Event,
    together: Callable[[], Awaitable[None]] | None = None,
    hold_s: float = HOLD_S,
    quiet_s: float = HOLD_QUIET_S,
) -> None:
    """Step 4: ``holding``'s refusals held until no call has arrived for ``quiet_s`` (at most
    ``hold_s``; not at all on ``hurry``), then the servers' ``stops`` begun (GOAWAY, listeners
    closed), then — once ``together`` returns: the other servers on these ports have begun
    theirs too — the held refusals answered; returns once every stop is done (each stop's
    grace must cover the wait for ``together``)."""
    held = holding is not None and not hurry.is_set()
    if held and holding is not None:
        holding.hold_refusals()
        await _quiet(holding, hurry, hold_s, quiet_s)
    stopping = asyncio.gather(*stops)
    await asyncio.sleep(0)  # each stop's first step has run: its shutdown has begun
    if held and together is not None:
        await together()
    if holding is not None:
        holding.release_refusals()
    await stopping


async def _quiet(holding: Holding, hurry: asyncio.Event, hold_s: float, quiet_s: float) -> None:
    """Return once no call has arrived for ``quiet_s`` of the loop's own time — as many quiet
    polls :data:`QUIET_POLL_S` apart, so a process that was not scheduled meanwhile (its
    calls still unread by grpc) waits longer — at most ``hold_s`` from now, or on ``hurry``."""
    end = time.monotonic() + hold_s
    polls = 0
    hurried: asyncio.Future[Any] = asyncio.ensure_future(hurry.wait())
    try:
        while not hurry.is_set() and polls * QUIET_POLL_S < quiet_s:
            if time.monotonic() >= end:
                break
            seen = holding.last_arrival
            await asyncio.wait({hurried}, timeout=QUIET_POLL_S)
            polls = polls + 1 if holding.last_arrival == seen else 0
    finally:
        hurried.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await hurried
