"""A call's bounds: the deadline in process, and a stalled body over a real connection (the size
limit and ``Expect: 100-continue`` are in test_server.py)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from gateway.errors import DeadlineExceeded
from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.connections import ConnectionLimits
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.routes import Routes
from gateway.transport.http.server import HttpServer

BOUNDS = CallBounds(timeout_ms=250, max_body_bytes=100, body_timeout_s=0.2)


async def test_a_call_past_its_deadline_is_deadline_exceeded_and_cancelled() -> None:
    started = asyncio.Event()
    cancelled = []

    async def work() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(DeadlineExceeded) as info:
        await BOUNDS.until(time.monotonic() - 1, work())
    assert info.value.message == (
        "Deadline exceeded: the call took longer than 250 ms (--rest_api_timeout_in_ms)"
    )
    assert bool(cancelled) or not started.is_set()


async def test_a_call_in_time_returns_its_value_and_its_own_timeouts_are_its_own() -> None:
    async def answer() -> int:
        return 42

    async def times_out() -> None:
        raise TimeoutError("the call's own")

    assert await BOUNDS.until(BOUNDS.deadline(), answer()) == 42
    with pytest.raises(TimeoutError, match="the call's own"):
        await BOUNDS.until(BOUNDS.deadline(), times_out())
    assert 0 < BOUNDS.deadline() - time.monotonic() <= 0.25


@pytest.mark.parametrize(
    "options",
    [
        {"timeout_ms": 0, "max_body_bytes": 1, "body_timeout_s": 1.0},
        {"timeout_ms": 1, "max_body_bytes": 0, "body_timeout_s": 1.0},
        {"timeout_ms": 1, "max_body_bytes": 1, "body_timeout_s": 0.0},
    ],
)
def test_bounds_must_be_positive(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        CallBounds(**options)


async def test_a_body_that_stalls_gets_408() -> None:
    routes = Routes()
    server = HttpServer(
        routes,
        ready=lambda: True,
        timeout_ms=250,
        max_body_bytes=100,
        limits=ConnectionLimits(body_timeout_s=0.2),
    )

    async def handler(request: HttpRequest) -> HttpResponse:
        body = await server.bounds.read_body(request)
        return HttpResponse(200, str(len(body)).encode(), "text/plain")

    routes.add_exact("/x", handler)

    port = await server.start("127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        answer = await reader.read()  # the server answers, then closes
        writer.close()
    finally:
        await server.stop(1)
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, document = head.split(b"\r\n")[0], json.loads(body)
    assert status_line == b"HTTP/1.1 408 Request Timeout"
    assert document == {
        "error": "the request body was not received within 0.2 s (--rest_api_body_timeout_seconds)"
    }
