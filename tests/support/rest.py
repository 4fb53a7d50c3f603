"""REST helpers shared by the tests: TF Serving's REST API on the HTTP server core, and small
clients that return whole answers (:func:`request` on an aiohttp session, :func:`http` with no
event loop)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from http.client import HTTPConnection
from typing import Any

import aiohttp
from multidict import CIMultiDict

from gateway.serving.core import ServingCore
from gateway.tfserving.rest.routes import ClassifyRegress, TfServingRest
from gateway.transport.http.http_messages import HttpRequest
from gateway.transport.http.routes import Routes
from gateway.transport.http.server import HttpServer

HTTP_TIMEOUT_S = 60.0
"""Bound of one :func:`http` call (never reached when things work)."""


def tf_rest_server(
    core: ServingCore,
    *,
    timeout_ms: int = 30_000,
    max_body_bytes: int = 2**24,
    max_elements: int = 2**20,
    enable_cors: bool = False,
    classify_regress: ClassifyRegress | None = None,
) -> HttpServer:
    """An HTTP server with TF Serving's REST API over ``core`` (and nothing else)."""
    routes = Routes()
    routes.add_api(
        TfServingRest(core, max_elements=max_elements, classify_regress=classify_regress)
    )
    return HttpServer(
        routes,
        ready=core.ready,
        timeout_ms=timeout_ms,
        max_body_bytes=max_body_bytes,
        enable_cors=enable_cors,
    )


def urlopen_answer(
    request: urllib.request.Request, timeout: float = 30.0
) -> tuple[int, bytes, Mapping[str, str]]:
    """(status, body, headers) of ``request`` over urllib, an HTTP error status included."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


@dataclass
class Reply:
    status: int
    headers: CIMultiDict[str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)  # the standard library reads NaN and Infinity

    def error(self) -> str:
        assert self.headers["Content-Type"] == "application/json"
        document = self.json()
        assert list(document) == ["error"], document
        message: str = document["error"]
        return message


async def request(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """One request on ``session`` (``body``: bytes, str, an async iterator of bytes, or a
    JSON-able value)."""
    if body is not None and not isinstance(body, bytes | str) and not hasattr(body, "__aiter__"):
        body = json.dumps(body, allow_nan=True)
    async with session.request(method, url, data=body, headers=headers or {}) as response:
        return Reply(response.status, response.headers.copy(), await response.read())


def http(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    """One request over the standard library's HTTP client (``body``: bytes, str, or a JSON-able
    value): no event loop, so sync and async tests alike may call it (it blocks the caller)."""
    if body is not None and not isinstance(body, bytes | str):
        body = json.dumps(body, allow_nan=True)
    if isinstance(body, str):
        body = body.encode()
    parts = urllib.parse.urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    connection = HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=HTTP_TIMEOUT_S)
    try:
        connection.request(method, target or "/", body=body, headers=headers or {})
        response = connection.getresponse()
        return Reply(response.status, CIMultiDict(response.getheaders()), response.read())
    finally:
        connection.close()


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> Reply:
    return http("POST", url, body, headers)


def get(url: str) -> Reply:
    return http("GET", url)


def made_request(
    method: str, target: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> HttpRequest:
    """A request as a connection hands it to a route, its body whole (no connection behind)."""
    fields = {name.lower(): value for name, value in (headers or {}).items()}
    request = HttpRequest(None, method, target.encode(), "1.1", fields)
    if body:
        request.chunks.append(body)
        request.size = len(body)
    request.complete = True
    return request
