"""The HTTP server core, protocol-neutral: real servers on port 0 driven by aiohttp's client, with
a small API of the tests' own registered as a protocol package registers its own (TF Serving's
routes over a real core are tests/tfserving/rest/test_routes.py).

Each test runs its servers and its client on one event loop of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from gateway.errors import InvalidArgument, from_wire
from gateway.serving.budget import MemoryBudget
from gateway.transport.auth import BearerTokens
from gateway.transport.call_admission import DRAINING
from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.front import Front, HttpError
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.routes import UNKNOWN_API, Answer, ApiCall, Observe, Routes
from gateway.transport.http.server import HttpServer
from tests.support.rest import Reply, request

ALT_TIMEOUT_MS = 300
ALT_MAX_BODY = 4096
PROTOCOL = "test"


class Echo:
    """The tests' protocol, under ``/t/``: ``POST /t/{model}:{verb}`` reads its JSON body and
    answers ``{"model", "verb", "bytes"}``, unless the body says otherwise — ``{"raise": CODE}``
    fails with that code, ``{"crash": 1}`` raises RuntimeError, ``{"hang": 1}`` never ends (the
    deadline ends it), ``{"gate": 1}`` sets :attr:`entered` and waits for :attr:`release`.
    ``GET /t/{model}`` answers ``{"model"}``. Another GET or POST is refused 400, another method
    405. :attr:`parses` counts the request lines parsed."""

    def __init__(self) -> None:
        self.parses = 0
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    def owns(self, path: str) -> bool:
        return path.startswith("/t/")

    def parse(self, method: str, path: str) -> ApiCall[str]:
        self.parses += 1
        model, _, verb = path.removeprefix("/t/").partition(":")
        if method == "POST" and verb:
            return ApiCall(
                PROTOCOL, verb.capitalize(), model, route=f"/t/{{m}}:{verb}", detail=verb
            )
        if method == "GET" and not verb:
            return ApiCall(PROTOCOL, "Status", model, route="/t/{m}", detail="status")
        if method in ("GET", "POST"):
            refusal: Exception = InvalidArgument(f"Malformed request: {method} {path}")
        else:
            refusal = HttpError(405, f"{path} answers POST, not {method}", Allow="POST")
        return ApiCall(PROTOCOL, UNKNOWN_API, refusal=refusal)

    async def serve(
        self, request: HttpRequest, call: ApiCall[str], bounds: CallBounds
    ) -> HttpResponse:
        if call.detail == "status":
            return _json({"model": call.model})
        body = await bounds.read_body(request)
        deadline = bounds.deadline()
        document = json.loads(body) if body.strip() else {}
        return await bounds.until(deadline, self._run(call, document, len(body)))

    async def _run(self, call: ApiCall[str], document: dict[str, Any], size: int) -> HttpResponse:
        if "raise" in document:
            raise from_wire(document["raise"], f"hook says {document['raise']}")
        if "crash" in document:
            raise RuntimeError("hook crashed")
        if "hang" in document:
            await asyncio.Event().wait()
        if "gate" in document:
            self.entered.set()
            await self.release.wait()
        return _json({"model": call.model, "verb": call.detail, "bytes": size})


def _json(document: Any) -> HttpResponse:
    return HttpResponse(200, json.dumps(document).encode())


async def _extra(request: HttpRequest) -> HttpResponse:
    return HttpResponse(200, f"extra {request.method}\n".encode(), "text/plain")


@dataclass
class Served:
    url: str
    server: HttpServer
    api: Echo
    session: aiohttp.ClientSession

    async def ask(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Reply:
        return await request(self.session, method, self.url + path, body, headers)


@contextlib.asynccontextmanager
async def serving(
    *,
    extra: bool = False,
    ready: Callable[[], bool] = lambda: True,
    timeout_ms: int = 30_000,
    max_body_bytes: int = 2**20,
    enable_cors: bool = False,
    observe: Observe | None = None,
    front: Front | None = None,
    budget: MemoryBudget | None = None,
    host: str = "127.0.0.1",
) -> AsyncIterator[Served]:
    """An HttpServer with :class:`Echo` (and ``/extra`` as an exact route when ``extra``) on an
    OS-chosen port of ``host``, asked on 127.0.0.1."""
    api = Echo()
    routes = Routes()
    if extra:
        routes.add_exact("/extra", _extra)
    routes.add_api(api)
    server = HttpServer(
        routes,
        ready=ready,
        timeout_ms=timeout_ms,
        max_body_bytes=max_body_bytes,
        enable_cors=enable_cors,
        observe=observe,
        front=front,
        budget=budget,
    )
    port = await server.start(host, 0)
    try:
        async with aiohttp.ClientSession() as session:
            yield Served(f"http://127.0.0.1:{port}", server, api, session)
    finally:
        await server.stop(5)


# -- bodies, deadlines, errors ---------------------------------------------------------------------
async def test_expect_100_continue_is_answered() -> None:
    body = json.dumps({"inputs": [[1, 2]] * 500})

    async with (
        serving() as served,
        served.session.post(f"{served.url}/t/m:run", data=body, expect100=True) as response,
    ):
        status_and_body = response.status, await response.json()
    assert status_and_body == (200, {"model": "m", "verb": "run", "bytes": len(body)})


async def _turns_until(check: Callable[[], bool], turns: int = 100_000) -> None:
    """Let the loop run (one iteration per turn, no timer) until ``check()`` holds."""
    for _ in range(turns):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("the server never got there")


async def test_bodies_being_read_count_against_the_in_flight_budget() -> None:
    """A slow connection's declared body holds the budget while it arrives;
    another body that would pass the budget, declared or chunked, is refused 429 at once (its
    connection closed); once the slow call ends its bytes are given back."""
    budget = MemoryBudget(1000)

    async def chunked() -> AsyncIterator[bytes]:
        yield b" " * 300

    async with serving(budget=budget) as served:
        host, port = served.url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = b"POST /t/m:run HTTP/1.1\r\nHost: x\r\nContent-Length: 800\r\n\r\n"
        writer.write(head + b" " * 10)  # then it stalls
        await _turns_until(lambda: budget.held_bytes == 800)
        for body in (b" " * 800, chunked()):
            refused = await served.ask("POST", "/t/m:run", body)
            assert refused.status == 429
            assert refused.headers["Retry-After"] == "1"
            assert refused.headers["Connection"] == "close"
            assert "REST request body: in-flight requests already hold 800 bytes" in (
                refused.error()
            )
            assert "(--max_inflight_bytes)" in refused.error()
        assert budget.held_bytes == 800
        writer.write(b" " * 790)
        answer = await reader.readuntil(b"}")
        writer.close()
        assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b'"bytes": 800}')
        assert budget.held_bytes == 0
        again = await served.ask("POST", "/t/m:run", b" " * 800)
        assert again.status == 200 and budget.held_bytes == 0


async def test_limits_of_body_size() -> None:
    async with serving(max_body_bytes=ALT_MAX_BODY) as served:
        reply = await served.ask("POST", "/t/m:run", b" " * (ALT_MAX_BODY + 1))
        assert reply.status == 400
        assert reply.error() == (
            f"Request body of {ALT_MAX_BODY + 1} bytes is over the limit of {ALT_MAX_BODY} "
            "bytes (--rest_api_max_body_bytes)"
        )

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while read
            for _ in range(ALT_MAX_BODY // 512 + 1):
                yield b" " * 512

        reply = await served.ask("POST", "/t/m:run", chunks())
        assert reply.status == 400
        assert "over the limit of 4096 bytes" in reply.error()
        reply = await served.ask("POST", "/t/m:run", b" " * ALT_MAX_BODY)
        assert (reply.status, reply.json()["bytes"]) == (200, ALT_MAX_BODY)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("INVALID_ARGUMENT", 400),
        ("FAILED_PRECONDITION", 400),
        ("NOT_FOUND", 404),
        ("ABORTED", 409),
        ("RESOURCE_EXHAUSTED", 429),
        ("CANCELLED", 499),
        ("INTERNAL", 500),
        ("UNIMPLEMENTED", 501),
        ("UNAVAILABLE", 503),
        ("DEADLINE_EXCEEDED", 504),
    ],
)
async def test_error_codes_map_to_tf_serving_http_statuses(code: str, status: int) -> None:
    async with serving() as served:
        reply = await served.ask("POST", "/t/m:run", {"raise": code})
    assert reply.status == status
    assert reply.error() == f"hook says {code}"
    assert reply.headers.get("Retry-After") == ("1" if status in (429, 503) else None)


async def test_unexpected_failures_and_deadlines() -> None:
    async with serving(timeout_ms=ALT_TIMEOUT_MS) as served:
        reply = await served.ask("POST", "/t/m:run", {"crash": True})
        assert reply.status == 500
        assert reply.error() == "RuntimeError: hook crashed"
        reply = await served.ask("POST", "/t/m:run", {"hang": True})
        assert reply.status == 504
        assert reply.error() == (
            f"Deadline exceeded: the call took longer than {ALT_TIMEOUT_MS} ms "
            "(--rest_api_timeout_in_ms)"
        )


# -- CORS, probes, routes --------------------------------------------------------------------------
async def test_cors_preflight_and_headers() -> None:
    asked = {
        "Origin": "http://example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, authorization",
    }
    origin = {"Origin": "http://example.com"}

    async with serving(enable_cors=True) as alt, serving() as plain:
        reply = await alt.ask("OPTIONS", "/t/m:run", headers=asked)
        assert reply.status == 200
        assert reply.headers["Access-Control-Allow-Origin"] == "*"
        assert "POST" in reply.headers["Access-Control-Allow-Methods"]
        assert reply.headers["Access-Control-Allow-Headers"] == "content-type, authorization"
        ok = await alt.ask("POST", "/t/m:run", {}, origin)
        assert ok.status == 200
        assert ok.headers["Access-Control-Allow-Origin"] == "*"
        # A page may read the call's timing (Server-Timing) only when it is exposed.
        assert ok.headers["Access-Control-Expose-Headers"] == "Server-Timing"
        failed = await alt.ask("POST", "/t/m:run", {"raise": "NOT_FOUND"}, origin)
        assert failed.status == 404
        assert failed.headers["Access-Control-Allow-Origin"] == "*"
        reply = await plain.ask("POST", "/t/m:run", {}, origin)
        assert reply.status == 200
        assert "Access-Control-Allow-Origin" not in reply.headers
        refused = await plain.ask("OPTIONS", "/t/m:run", headers=asked)
        assert (refused.status, refused.headers["Allow"]) == (405, "POST")


async def test_probes_and_extra_routes() -> None:
    async with serving(extra=True) as alt, serving() as plain:
        for served in (plain, alt):
            live = await served.ask("GET", "/healthz")
            assert (live.status, live.body) == (200, b"ok\n")
            assert live.headers["Content-Type"].startswith("text/plain")
            ready = await served.ask("GET", "/readyz")
            assert (ready.status, ready.body) == (200, b"ready\n")
        assert (await alt.ask("GET", "/extra")).body == b"extra GET\n"
        assert (await alt.ask("DELETE", "/extra")).body == b"extra DELETE\n"
        missing = await plain.ask("GET", "/extra")
        assert (missing.status, missing.error()) == (
            404,
            "Not found: no route for GET on this path",
        )


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as loopback6:
            loopback6.bind(("::1", 0))  # is there an IPv6 loopback at all
    except OSError:
        return False
    return True


async def test_port_0_on_every_interface_is_one_port_for_ipv4_and_ipv6() -> None:
    async with serving(host="") as served:
        port = served.url.rsplit(":", 1)[1]
        urls = [served.url, *([f"http://[::1]:{port}"] if _ipv6_loopback() else [])]
        statuses = [(await request(served.session, "GET", f"{url}/healthz")).status for url in urls]
    assert set(statuses) == {200}


async def test_readiness_follows_the_core_and_draining_and_probes_take_get_and_head() -> None:
    ready = [False]

    async with serving(ready=lambda: ready[0]) as served:
        reply = await served.ask("GET", "/readyz")
        assert (reply.status, reply.body) == (503, b"not ready\n")
        ready[0] = True
        assert (await served.ask("HEAD", "/readyz")).status == 200
        refused = await served.ask("POST", "/healthz")
        assert (refused.status, refused.headers["Allow"]) == (405, "GET, HEAD")
        assert refused.error() == "/healthz answers GET and HEAD, not POST"
        served.server.start_draining()
        assert (await served.ask("GET", "/readyz")).status == 503
        assert (await served.ask("GET", "/healthz")).status == 200
        call = await served.ask("POST", "/t/m:run", {})
        assert (call.status, call.error(), call.headers["Retry-After"]) == (503, DRAINING, "1")


async def test_a_refused_request_line_is_answered_after_the_token_and_the_bound() -> None:
    front = Front(auth=BearerTokens(["secret"]), max_concurrent=1)
    token = {"Authorization": "Bearer secret"}

    async with serving(front=front) as served:
        assert (await served.ask("POST", "/t/m")).status == 401
        malformed = await served.ask("POST", "/t/m", headers=token)
        assert (malformed.status, malformed.error()) == (400, "Malformed request: POST /t/m")
        wrong = await served.ask("DELETE", "/t/m:run", headers=token)
        assert (wrong.status, wrong.headers["Allow"]) == (405, "POST")
        busy = asyncio.create_task(served.ask("POST", "/t/m:run", {"gate": 1}, token))
        await served.api.entered.wait()
        refused = await served.ask("POST", "/t/m", headers=token)
        assert refused.status == 503 and "--max_concurrent_requests" in refused.error()
        served.api.release.set()
        assert (await busy).status == 200
        assert front.in_flight == 0


async def test_each_api_call_is_parsed_once_and_observed_with_that_parse() -> None:
    seen: list[tuple[str, str, str | None, int]] = []

    async def observe(request: HttpRequest, call: ApiCall[Any], answer: Answer) -> HttpResponse:
        response = await answer()
        seen.append((call.api, call.model, response.code, response.status))
        return response

    async with serving(extra=True, observe=observe) as served:
        await served.ask("POST", "/t/m:run", {})
        await served.ask("POST", "/t/n:run", {"raise": "NOT_FOUND"})
        await served.ask("GET", "/t/m")
        await served.ask("POST", "/t/m")
        for path in ("/healthz", "/extra", "/nope"):
            await served.ask("GET", path)
        parses = served.api.parses
    assert parses == 4
    assert seen == [
        ("Run", "m", None, 200),
        ("Run", "n", "NOT_FOUND", 404),
        ("Status", "m", None, 200),
        (UNKNOWN_API, "", "INVALID_ARGUMENT", 400),
    ]


# -- stop ------------------------------------------------------------------------------------------
async def test_stop_finishes_calls_in_flight_then_refuses() -> None:
    async with serving() as served:
        call = asyncio.create_task(served.ask("POST", "/t/m:run", {"gate": 1}))
        await served.api.entered.wait()
        stopping = asyncio.create_task(served.server.stop(60))
        finished, _ = await asyncio.wait({stopping}, timeout=0.2)
        assert not finished, "stop() returned while a call was in flight"
        served.api.release.set()
        reply = await call
        assert (reply.status, reply.json()["verb"]) == (200, "run")
        await stopping
        with pytest.raises(aiohttp.ClientConnectionError):
            await served.ask("POST", "/t/m:run", {})
        await served.server.stop(1)  # a second stop is a no-op


async def test_stop_cancels_calls_past_the_grace_period() -> None:
    async with serving(timeout_ms=60_000) as served:
        call = asyncio.create_task(served.ask("POST", "/t/m:run", {"gate": 1}))
        await served.api.entered.wait()
        await served.server.stop(0.05)
        with pytest.raises(aiohttp.ClientError):
            await call


async def test_not_found_and_wrong_method_answers_never_quote_the_path() -> None:
    """A path is the caller's text: an error quoting it would be the caller's page (a
    ``<script>`` sent back), so 404s do not, and 405s name only the route's own path."""
    script = "/%3Cscript%3Ealert(1)%3C/script%3E"

    async with serving(extra=True) as served:
        for method in ("GET", "POST", "DELETE"):
            reply = await served.ask(method, script)
            assert reply.status == 404
            assert "script" not in reply.body.decode().lower(), reply.body
            assert reply.headers["X-Content-Type-Options"] == "nosniff"
