"""REST connections on a real aiohttp server (port 0), spoken to over raw streams: the connection
cap, the header deadline, the HTTP parser's refusals as JSON, chunks declared over the limit."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod, HttpProcessingError, LineTooLong

from gateway.config.settings import Settings
from gateway.transport.http.connections import (
    ConnectionLimits,
    make_server,
    note_request,
    parser_error,
    rest_limits,
)


class Held:
    """The handler: answers ``/ok`` at once; ``/held`` waits for :attr:`release`."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        note_request(request)
        if request.path == "/held":
            self.entered.set()
            await self.release.wait()
        await request.read()
        return web.Response(text="ok")


@contextlib.asynccontextmanager
async def serving(limits: ConnectionLimits, handler: Held | None = None) -> AsyncIterator[int]:
    runner = web.ServerRunner(make_server(handler or Held(), limits))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


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


@pytest.mark.parametrize(
    ("error", "status", "message"),
    [
        (BadHttpMethod("FOO"), 501, "the request's HTTP method is not supported"),
        (BadHttpMethod("\x16\x03\x01 HTTPS"), 400, "TLS traffic on a plain-HTTP port"),
        (LineTooLong("line", "8190"), 400, "the request line or a header field is longer than"),
        (
            HttpProcessingError(message="Data after `Connection: close`:\n\x00junk"),
            400,
            "malformed HTTP request: Data after `Connection: close`",
        ),
        (None, 500, "the request could not be handled"),
    ],
)
def test_parser_errors_say_what_is_wrong_without_the_request_s_bytes(
    error: BaseException | None, status: int, message: str
) -> None:
    got_status, got_message = parser_error(error)
    assert got_status == status and got_message.startswith(message)
    assert "junk" not in got_message


def test_the_flags_give_the_limits() -> None:
    settings = Settings(
        model_base_path="/m",
        rest_api_max_connections=7,
        rest_api_header_timeout_seconds=1.5,
        rest_api_body_timeout_seconds=2.5,
        rest_api_idle_timeout_seconds=3.5,
        rest_api_max_body_bytes=99,
    )
    assert rest_limits(settings) == ConnectionLimits(7, 1.5, 2.5, 3.5, 99)


def test_connections_past_the_cap_get_503_and_are_closed() -> None:
    async def scenario() -> None:
        async with serving(ConnectionLimits(max_connections=1)) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
                assert (await _answer(reader))[0] == 200  # served, and kept open
                status, headers, body, closed = await _ask(port, b"")
                assert (status, headers["retry-after"], closed) == (503, "1", True)
                assert body == {"error": "too many open connections (the limit is 1); retry"}
            finally:
                writer.close()

    asyncio.run(scenario())


def test_a_head_not_sent_in_time_is_cut_off_and_a_head_received_is_not() -> None:
    async def scenario() -> None:
        handler = Held()
        async with serving(ConnectionLimits(header_timeout_s=0.05), handler) as port:
            busy_reader, busy = await asyncio.open_connection("127.0.0.1", port)
            busy.write(b"GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
            await handler.entered.wait()
            slow_reader, slow = await asyncio.open_connection("127.0.0.1", port)
            slow.write(b"GET /ok HTTP/1.1\r\nHost: x\r\n")  # never finished
            assert await slow_reader.read() == b""  # closed by the server
            # The busy connection's deadline, set earlier, has passed too: it was cancelled.
            handler.release.set()
            assert (await _answer(busy_reader))[0] == 200
            for writer in (busy, slow):
                writer.close()

    asyncio.run(scenario())


def test_requests_the_parser_refuses_are_json_that_never_echoes_them() -> None:
    async def scenario() -> None:
        async with serving(ConnectionLimits()) as port:
            status, _, body, closed = await _ask(port, b"FOO /x HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (status, body, closed) == (
                501,
                {"error": "the request's HTTP method is not supported"},
                True,
            )
            raw = b"GET /" + b"junk" * 3000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
            status, _, body, _ = await _ask(port, raw)
            assert status == 400 and "junk" not in body["error"]

    asyncio.run(scenario())


def test_a_chunk_declared_over_the_body_limit_is_refused_at_once() -> None:
    raw = b"POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\nabc"

    async def scenario() -> None:
        async with serving(ConnectionLimits(max_body_bytes=1000)) as port:
            status, _, body, closed = await _ask(port, raw)
            assert (status, closed) == (400, True)
            assert body["error"] == (
                "Request body of more than 1000 bytes is over the limit (a chunk declares "
                f"{0xFFFFFFFF} bytes; --rest_api_max_body_bytes)"
            )

    asyncio.run(scenario())
