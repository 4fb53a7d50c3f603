"""The parts of aiohttp the REST transport relies on beyond its documented API, checked against
the installed aiohttp: a version that renames, removes or reshapes one fails here, naming the
member (the list is :mod:`gateway.transport.http.connections`' docstring)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiohttp import http_exceptions, web
from aiohttp.abc import AbstractStreamWriter

from gateway.transport.http import connections


def _parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def _check(member: str, ok: bool, what: str) -> None:
    assert ok, f"aiohttp {member}: {what} (gateway/transport/http relies on it)"


@pytest.mark.parametrize(
    ("method", "parameters"),
    [
        ("connection_made", ["self", "transport"]),
        ("data_received", ["self", "data"]),
        ("connection_lost", ["self", "exc"]),
        ("handle_error", ["self", "request", "status", "exc", "message"]),
        ("force_close", ["self"]),
    ],
)
def test_request_handler_methods_we_override_or_call_keep_their_shape(
    method: str, parameters: list[str]
) -> None:
    found = getattr(web.RequestHandler, method, None)
    _check(f"RequestHandler.{method}", callable(found), "missing")
    assert found is not None
    _check(f"RequestHandler.{method}", _parameters(found) == parameters, f"not {parameters}")


def test_request_handler_takes_its_server_and_the_options_we_pass() -> None:
    init = _parameters(web.RequestHandler.__init__)
    _check("RequestHandler.__init__", init[:2] == ["self", "manager"], "manager first")
    for option in ("loop", "keepalive_timeout", "access_log", "lingering_time"):
        _check("RequestHandler.__init__", option in init, f"no {option!r} option")
    _check("RequestHandler.transport", hasattr(web.RequestHandler, "transport"), "missing")


def test_our_connection_s_attributes_do_not_shadow_aiohttp_s() -> None:
    ours = {"_server", "_limits", "_head_timer", "_chunks"}
    slots = set(getattr(web.RequestHandler, "__slots__", ()))
    attributes = {name for name in dir(web.RequestHandler) if name.startswith("_")}
    clashes = ours & (slots | attributes)
    _check("RequestHandler", not clashes, f"has attributes named {sorted(clashes)}")


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_server_keeps_its_loop_and_handler_options_and_its_connections(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        return web.Response()

    init = _parameters(web.Server.__init__)
    _check("Server.__init__", "handler_cancellation" in init, "no 'handler_cancellation' option")
    server = web.Server(handler, loop=loop, keepalive_timeout=5.0)
    _check("Server._loop", getattr(server, "_loop", None) is loop, "not the server's loop")
    kwargs = getattr(server, "_kwargs", None)
    _check("Server._kwargs", kwargs == {"keepalive_timeout": 5.0}, "not the handler options")
    _check("Server.__call__", _parameters(type(server).__call__) == ["self"], "not a factory")
    _check("Server.connections", len(server.connections) == 0, "not a sized collection")
    _check("Server.pre_shutdown", callable(getattr(server, "pre_shutdown", None)), "missing")


def test_our_server_builds_our_connections(loop: asyncio.AbstractEventLoop) -> None:
    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        return web.Response()

    async def build() -> object:
        return connections.make_server(handler, connections.ConnectionLimits())()

    connection = loop.run_until_complete(build())
    _check("Server.__call__", isinstance(connection, web.RequestHandler), "not a RequestHandler")


def test_requests_expose_their_writer_and_protocol_and_the_writer_its_output_size() -> None:
    for member in ("writer", "protocol"):
        found = inspect.getattr_static(web.BaseRequest, member, None)
        _check(f"BaseRequest.{member}", isinstance(found, property), "not a property")
    _check("StreamWriter.output_size", hasattr(AbstractStreamWriter, "output_size"), "missing")
    write = AbstractStreamWriter.write
    _check("StreamWriter.write", inspect.iscoroutinefunction(write), "not a coroutine")


def test_runner_takes_a_shutdown_timeout_and_exposes_its_server_and_addresses() -> None:
    _check(
        "BaseRunner.__init__",
        "shutdown_timeout" in _parameters(web.BaseRunner.__init__),
        "no 'shutdown_timeout' option",
    )
    for member in ("server", "addresses"):
        found = inspect.getattr_static(web.ServerRunner, member, None)
        _check(f"ServerRunner.{member}", isinstance(found, property), "not a property")


def test_parser_errors_carry_what_our_messages_read() -> None:
    too_long = http_exceptions.LineTooLong(b"GET /x", 8190)
    _check("LineTooLong.args", too_long.args[1] == 8190, "args[1] is not the limit")
    error = http_exceptions.HttpProcessingError(message="bad header: x")
    _check("HttpProcessingError.message", error.message == "bad header: x", "no message")
    method = http_exceptions.BadHttpMethod
    _check("BadHttpMethod", issubclass(method, http_exceptions.HttpProcessingError), "moved")
