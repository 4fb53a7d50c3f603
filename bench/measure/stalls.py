"""How long a server keeps its other callers waiting while hostile calls run: bystanders that
call back to back, and the hostile calls themselves, timed.

:class:`Bystanders` runs each :class:`Bystander` on a thread of its own: one call, then
:data:`GAP_S`, then the next, each recorded as a :class:`Timed` (when it started, how long it
took, its status). :meth:`Bystanders.window` summarises the calls that overlapped a time window
(the hostile calls' run): their longest wait is what the server's loop was held for, give or
take a gap. :func:`timed_calls` sends the hostile calls (several at once when asked) and records
each the same way. Calls are made with grpc's and the standard library's blocking clients;
``connections`` spreads a bystander over several connections (several front ends share a port:
the kernel gives each connection to one of them).
"""

from __future__ import annotations

import http.client
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import cycle
from typing import Any

import grpc

GAP_S = 0.01
"""Seconds between two calls of one bystander."""
CALL_TIMEOUT_S = 60.0
"""A bystander's deadline per call."""


@dataclass(frozen=True)
class Timed:
    """One call: when it started (``time.monotonic()``), how long it took, its status."""

    started: float
    seconds: float
    status: str

    @property
    def ended(self) -> float:
        return self.started + self.seconds


Call = Callable[[], str]
"""Makes one call and answers its status (``OK``, a gRPC code's name, an HTTP status)."""


def grpc_caller(
    target: str,
    path: str,
    request: bytes,
    *,
    connections: int = 1,
    metadata: Sequence[tuple[str, str]] = (),
    timeout_s: float = CALL_TIMEOUT_S,
) -> tuple[Call, Callable[[], None]]:
    """A :data:`Call` of gRPC method ``path`` with ``request`` (serialized), over
    ``connections`` connections in turn, and what closes them."""
    channels = [
        grpc.insecure_channel(
            target,
            options=[
                ("grpc.use_local_subchannel_pool", 1),  # a connection of its own
                ("grpc.max_receive_message_length", -1),
            ],
        )
        for _ in range(connections)
    ]
    calls = cycle([channel.unary_unary(path) for channel in channels])
    lock = threading.Lock()

    def call() -> str:
        with lock:
            method = next(calls)
        try:
            method(request, timeout=timeout_s, metadata=tuple(metadata))
        except grpc.RpcError as error:
            return str(error.code().name)
        return "OK"

    def close() -> None:
        for channel in channels:
            channel.close()

    return call, close


def http_caller(
    port: int,
    path: str,
    *,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    connections: int = 1,
    timeout_s: float = CALL_TIMEOUT_S,
) -> tuple[Call, Callable[[], None]]:
    """A :data:`Call` of ``method path`` on 127.0.0.1:``port`` over ``connections`` kept-alive
    connections in turn (one that fails is opened again), and what closes them."""
    pool = [http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)]
    pool += [http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
             for _ in range(connections - 1)]  # fmt: skip
    turn = cycle(range(connections))
    lock = threading.Lock()

    def call() -> str:
        with lock:
            index = next(turn)
        connection = pool[index]
        try:
            connection.request(method, path, body=body, headers=headers or {})
            answer = connection.getresponse()
            answer.read()
            return str(answer.status)
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            pool[index] = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
            return type(error).__name__

    def close() -> None:
        for connection in pool:
            connection.close()

    return call, close


class Bystander:
    """``call`` made back to back, :data:`GAP_S` apart, on a thread, until stopped."""

    def __init__(self, name: str, call: Call, close: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self._call = call
        self._close = close
        self.calls: list[Timed] = []
        self.in_flight: float | None = None
        """When the call in progress started (``time.monotonic()``; None: none)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"bystander-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._close()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = self.in_flight = time.monotonic()
            status = self._call()
            self.calls.append(Timed(started, time.monotonic() - started, status))
            self.in_flight = None
            self._stop.wait(GAP_S)

    def overlapping(self, start: float, end: float) -> list[Timed]:
        """The calls that overlapped ``[start, end]``, the one in progress included (as
        ``in flight``, timed until now): a call held past the window still counts."""
        found = [c for c in list(self.calls) if c.ended >= start and c.started <= end]
        began = self.in_flight
        if began is not None and began <= end:
            found.append(Timed(began, time.monotonic() - began, "in flight"))
        return found


class Bystanders:
    """Several :class:`Bystander` at once, as a context manager (started on entry, stopped and
    closed on exit)."""

    def __init__(self, bystanders: Sequence[Bystander]) -> None:
        self.bystanders = list(bystanders)

    def __enter__(self) -> Bystanders:
        for bystander in self.bystanders:
            bystander.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for bystander in self.bystanders:
            bystander.stop()

    def window(self, start: float, end: float) -> dict[str, dict[str, Any]]:
        """Per bystander, :func:`summary` of its calls that overlapped ``[start, end]`` (the one
        in progress included)."""
        return {b.name: summary(b.overlapping(start, end)) for b in self.bystanders}


def summary(calls: Sequence[Timed]) -> dict[str, Any]:
    """Count, statuses, and the median, 99th percentile and longest time (ms) of ``calls``."""
    if not calls:
        return {"calls": 0, "statuses": {}}
    times = sorted(c.seconds * 1e3 for c in calls)
    return {
        "calls": len(calls),
        "statuses": dict(Counter(c.status for c in calls)),
        "median_ms": round(statistics.median(times), 2),
        "p99_ms": round(times[min(len(times) - 1, int(0.99 * len(times)))], 2),
        "max_ms": round(times[-1], 2),
    }


def longest_ms(window: dict[str, dict[str, Any]]) -> float | None:
    """The longest wait (ms) of any bystander in a :meth:`Bystanders.window`."""
    waits = [float(s["max_ms"]) for s in window.values() if s.get("calls")]
    return max(waits, default=None)


def timed_calls(calls: Sequence[Call], *, at_once: int = 1) -> list[Timed]:
    """Make each of ``calls``, ``at_once`` at a time, each timed; in the order given."""

    def one(call: Call) -> Timed:
        started = time.monotonic()
        status = call()
        return Timed(started, time.monotonic() - started, status)

    if at_once <= 1:
        return [one(call) for call in calls]
    with ThreadPoolExecutor(max_workers=at_once) as pool:
        return list(pool.map(one, calls))
