"""REST connections on a real server (port 0), spoken to over raw streams: the connection cap and
who makes room, the bound per address, the head's size and deadline, answers a client never
takes, chunks declared over the limit, and what closed connections leave behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.config.settings import Settings
from gateway.transport.http.connections import ConnectionLimits, rest_limits, sweep_interval
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.routes import Routes
from gateway.transport.http.server import HttpServer
from tests.support.idle_loop import settle

BIG = b"x" * (32 * 1024 * 1024)


class Pages:
    """Exact routes: ``/ok`` answers at once (its body's size), ``/held`` waits for
    :attr:`release`, ``/big`` answers 32 MiB."""

    def __init__(self, server: HttpServer) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.server = server

    async def ok(self, request: HttpRequest) -> HttpResponse:
        body = await self.server.bounds.read_body(request)
        return HttpResponse(200, json.dumps({"bytes": len(body)}).encode())

    async def held(self, request: HttpRequest) -> HttpResponse:
        self.entered.set()
        await self.release.wait()
        return HttpResponse(200, b"{}")

    async def big(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, BIG, "application/octet-stream")


@contextlib.asynccontextmanager
async def serving(limits: ConnectionLimits) -> AsyncIterator[tuple[int, Pages, HttpServer]]:
    routes = Routes()
    server = HttpServer(
        routes,
        ready=lambda: True,
        timeout_ms=30_000,
        max_body_bytes=limits.max_body_bytes,
        limits=limits,
    )
    pages = Pages(server)
    routes.add_exact("/ok", pages.ok)
    routes.add_exact("/held", pages.held)
    routes.add_exact("/big", pages.big)
    port = await server.start("127.0.0.1", 0)
    try:
        yield port, pages, server
    finally:
        await server.stop(1)


async def _answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One answer (Content-Length body): status, headers (lower-case names), body."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return int(lines[0].split()[1]), headers, body


async def _ask(port: int, raw: bytes) -> tuple[int, dict[str, str], Any, bool]:
    """Send ``raw`` on a new connection: status, headers, JSON body, and whether it closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        status, headers, body = await _answer(reader)
        closed = await reader.read() == b""
    finally:
        writer.close()
    return status, headers, json.loads(body), closed


GET_OK = b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"
GET_ONCE = b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def test_the_flags_give_the_limits() -> None:
    settings = Settings(
        model_base_path="/m",
        rest_api_max_connections=7,
        rest_api_header_timeout_seconds=1.5,
        rest_api_body_timeout_seconds=2.5,
        rest_api_idle_timeout_seconds=3.5,
        rest_api_max_body_bytes=99,
        rest_api_max_header_bytes=4096,
        rest_api_write_timeout_seconds=4.5,
        rest_api_max_connections_per_peer=3,
    )
    assert rest_limits(settings) == ConnectionLimits(7, 1.5, 2.5, 3.5, 99, 4096, 4.5, 3)
    assert sweep_interval(ConnectionLimits()) == 1.0
    assert sweep_interval(ConnectionLimits(header_timeout_s=0.2)) == 0.05


async def test_past_the_cap_the_longest_waiting_connection_makes_room() -> None:
    """Clients that merely hold connections cannot keep a new one out: the connection that has
    waited longest without a request is closed (nothing of it is lost), the new one served."""

    async with serving(ConnectionLimits(max_connections=2)) as (port, _, _):
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        for reader, writer in reversed(held):  # the second one is now the older waiter
            writer.write(GET_OK)
            assert (await _answer(reader))[0] == 200
        status, _, body, _ = await _ask(port, GET_ONCE)
        assert (status, body) == (200, {"bytes": 0})
        (first_reader, first), (second_reader, _) = held
        assert await second_reader.read() == b""  # closed for the newcomer
        first.write(GET_OK)
        assert (await _answer(first_reader))[0] == 200  # still served
        for _, writer in held:
            writer.close()


async def test_past_the_cap_with_every_connection_busy_the_new_one_gets_503() -> None:
    async with serving(ConnectionLimits(max_connections=1)) as (port, pages, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
        await pages.entered.wait()
        status, headers, body, closed = await _ask(port, b"")
        assert (status, headers["retry-after"], closed) == (503, "1", True)
        assert body == {
            "error": "too many open connections (the limit is 1, all serving requests); retry"
        }
        pages.release.set()
        assert (await _answer(reader))[0] == 200
        writer.close()


async def test_connections_from_one_address_are_bounded() -> None:
    async with serving(ConnectionLimits(max_per_peer=2)) as (port, _, _):
        kept = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        status, headers, body, closed = await _ask(port, GET_ONCE)
        assert (status, headers["retry-after"], closed) == (503, "1", True)
        assert "--rest_api_max_connections_per_peer" in body["error"]
        kept.pop()[1].close()
        reader, writer = kept[0]
        writer.write(GET_OK)
        assert (await _answer(reader))[0] == 200
        await settle()  # the server saw the close: the place is given back
        status, *_ = await _ask(port, GET_ONCE)
        assert status == 200
        writer.close()


async def test_a_head_not_sent_in_time_is_cut_off_and_a_head_received_is_not() -> None:
    async with serving(ConnectionLimits(header_timeout_s=0.05)) as (port, pages, _):
        busy_reader, busy = await asyncio.open_connection("127.0.0.1", port)
        busy.write(b"GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
        await pages.entered.wait()
        slow_reader, slow = await asyncio.open_connection("127.0.0.1", port)
        slow.write(b"GET /ok HTTP/1.1\r\nHost: x\r\n")  # never finished
        assert await slow_reader.read() == b""  # closed by the server
        pages.release.set()
        assert (await _answer(busy_reader))[0] == 200
        for writer in (busy, slow):
            writer.close()


@pytest.mark.parametrize(
    ("head", "status", "message"),
    [
        (b"X: " + b"a" * 9000 + b"\r\n", 431, "a header line is longer than 8190 bytes"),
        (b"".join(b"X%d: a\r\n" % i for i in range(129)), 431, "more than 128 headers"),
        (
            b"".join(b"X%d: %s\r\n" % (i, b"a" * 8000) for i in range(5)),
            431,
            "the request's headers are larger than 32768 bytes (--rest_api_max_header_bytes)",
        ),
    ],
)
async def test_heads_are_bounded_in_lines_count_and_total_bytes(
    head: bytes, status: int, message: str
) -> None:
    async with serving(ConnectionLimits()) as (port, _, _):
        got, _, body, closed = await _ask(port, b"GET /ok HTTP/1.1\r\n" + head + b"\r\n")
        assert (got, closed) == (status, True)
        assert message in body["error"]


async def test_an_unfinished_head_is_refused_as_soon_as_it_passes_the_bound() -> None:
    """Its bytes are counted as they arrive: a head that never ends cannot park more than the
    bound (nor wait for the header deadline)."""

    limits = ConnectionLimits(header_timeout_s=3600, max_header_bytes=4096)
    async with serving(limits) as (port, _, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /ok HTTP/1.1\r\n")
        for i in range(10):
            writer.write(b"X%d: %s\r\n" % (i, b"a" * 1000))
        writer.write(b"Y: " + b"b" * 3000)  # an unfinished line
        status, _, body = await _answer(reader)
        assert status == 431 and "larger than 4096 bytes" in json.loads(body)["error"]
        assert await reader.read() == b""
        writer.close()


async def test_an_answer_never_taken_aborts_its_connection() -> None:
    """A client that never reads cannot hold its answer's bytes past the write timeout."""

    limits = ConnectionLimits(write_timeout_s=5)
    async with serving(limits) as (port, _, server):
        _, writer = await asyncio.open_connection("127.0.0.1", port, limit=1024)
        writer.transport.pause_reading()  # type: ignore[attr-defined]  # it never reads
        writer.write(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        await settle()  # the answer is written, most of it waits in the server's buffer
        now = asyncio.get_running_loop().time()
        server.connections.sweep(now + 4)
        assert len(server.connections.open) == 1  # not yet
        server.connections.sweep(now + 6)
        assert not server.connections.open
        writer.close()


async def test_a_chunk_declared_over_the_body_limit_is_refused_at_once() -> None:
    raw = b"POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\nabc"

    async with serving(ConnectionLimits(max_body_bytes=1000)) as (port, _, _):
        status, _, body, closed = await _ask(port, raw)
        assert (status, closed) == (400, True)
        assert body["error"] == (
            "Request body of more than 1000 bytes is over the limit (a chunk declares "
            f"{0xFFFFFFFF} bytes; --rest_api_max_body_bytes)"
        )


async def test_pipelined_requests_are_answered_in_order() -> None:
    async with serving(ConnectionLimits()) as (port, _, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        requests = b"".join(
            b"POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (n, b"a" * n)
            for n in range(200)
        )
        writer.write(requests)
        sizes = [json.loads((await _answer(reader))[2])["bytes"] for _ in range(200)]
        writer.close()
    assert sizes == list(range(200))


async def test_closed_connections_leave_nothing_behind() -> None:
    """What a connection parked (a partial head, a body) goes with it once it closes."""

    async with serving(ConnectionLimits()) as (port, _, server):
        writers = []
        for _ in range(20):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /ok HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 8000)
            writers.append(writer)
        await settle()
        assert len(server.connections.open) == 20
        refs = [weakref.ref(c) for c in server.connections.open]
        for writer in writers:
            writer.close()
        await settle()
        assert not server.connections.open
    assert len(refs) == 20 and not [r for r in refs if r() is not None]
