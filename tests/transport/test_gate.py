"""The gRPC gate on a real grpc.aio server (port 0): undecodable messages, bearer tokens,
draining and the concurrency bound, for services registered as the servers register them."""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2

from gateway.drain import shut_down
from gateway.serving.budget import MemoryBudget
from gateway.transport.auth import BearerTokens
from gateway.transport.gate import HELD_ANSWER_BYTES, HELD_ANSWER_COPIES, Gate
from gateway.transport.grpc_services import register
from gateway.transport.surface import GrpcService
from tests.support.fakes import FakeContext

BOUNDED = "test.Bounded"
FREE = "test.Free"
HEALTH = "grpc.health.v1.Health"
REQUEST = health_pb2.HealthCheckRequest
TOKEN = (("authorization", "Bearer secret"),)


class Backend:
    """The servicers behind the gate: ``Call`` answers at once unless the request's service is
    ``"gate"`` (then it waits for :attr:`release`); ``Watch`` streams two answers."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def call(self, request: Any, context: Any) -> health_pb2.HealthCheckResponse:
        if request.service == "gate":
            self.entered.set()
            await self.release.wait()
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)

    async def watch(self, request: Any, context: Any) -> AsyncIterator[Any]:
        for _ in range(2):
            yield health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


def _handlers(backend: Backend) -> dict[str, grpc.RpcMethodHandler]:
    codec: dict[str, Any] = {
        "request_deserializer": REQUEST.FromString,
        "response_serializer": health_pb2.HealthCheckResponse.SerializeToString,
    }
    return {
        "Call": grpc.unary_unary_rpc_method_handler(backend.call, **codec),
        "Watch": grpc.unary_stream_rpc_method_handler(backend.watch, **codec),
    }


@dataclass
class Gated:
    gate: Gate
    backend: Backend
    channel: grpc.aio.Channel

    async def ask(self, service: str, body: bytes, metadata: Any = TOKEN) -> grpc.StatusCode:
        """Call ``service``'s ``Call`` with raw ``body``; the status it ends with."""
        try:
            await self.channel.unary_unary(f"/{service}/Call")(body, metadata=metadata, timeout=30)
        except grpc.aio.AioRpcError as error:
            self.last_error = error.details()
            return error.code()
        return grpc.StatusCode.OK

    last_error: str | None = None


@contextlib.asynccontextmanager
async def gated(gate: Gate) -> AsyncIterator[Gated]:
    backend = Backend()
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    services = [
        GrpcService(name, "test", _handlers(backend), bounded=name == BOUNDED)
        for name in (BOUNDED, FREE, HEALTH)
    ]
    register(server, services, gate, None)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield Gated(gate, backend, channel)
    finally:
        await server.stop(None)


def _serialized(service: str) -> bytes:
    return REQUEST(service=service).SerializeToString()


async def test_undecodable_messages_are_invalid_argument_and_never_reach_the_servicer() -> None:
    async with gated(Gate()) as g:
        assert await g.ask(FREE, b"\xff\xff\xff") == grpc.StatusCode.INVALID_ARGUMENT
        assert g.last_error == (
            "the request is not a valid grpc.health.v1.HealthCheckRequest message"
        )
        assert await g.ask(FREE, _serialized("x")) == grpc.StatusCode.OK


async def test_a_token_is_needed_unless_the_method_is_open() -> None:
    auth = BearerTokens(["secret"], open_paths=[f"/{HEALTH}/"])

    async with gated(Gate(auth=auth)) as g:
        assert await g.ask(FREE, _serialized("x"), ()) == grpc.StatusCode.UNAUTHENTICATED
        wrong = (("authorization", "Bearer nope"),)
        assert await g.ask(FREE, _serialized("x"), wrong) == grpc.StatusCode.UNAUTHENTICATED
        assert await g.ask(FREE, _serialized("x")) == grpc.StatusCode.OK
        assert await g.ask(HEALTH, _serialized("x"), ()) == grpc.StatusCode.OK


async def test_draining_refuses_every_call_but_health_and_waits_for_the_running_ones() -> None:
    async with gated(Gate()) as g:
        running = asyncio.create_task(g.ask(FREE, _serialized("gate")))
        await g.backend.entered.wait()
        g.gate.start_draining()
        assert await g.ask(BOUNDED, _serialized("x")) == grpc.StatusCode.UNAVAILABLE
        assert g.last_error == "the server is shutting down; retry on another replica"
        assert await g.ask(HEALTH, _serialized("x")) == grpc.StatusCode.OK
        idle = asyncio.create_task(g.gate.wait_idle())
        finished, _ = await asyncio.wait({idle}, timeout=0.05)
        assert not finished, "wait_idle returned while a call was running"
        g.backend.release.set()
        assert await running == grpc.StatusCode.OK
        await idle


@pytest.mark.parametrize("service", [BOUNDED, FREE])
async def test_only_bounded_services_count_against_the_bound(service: str) -> None:
    async with gated(Gate(max_concurrent=1)) as g:
        busy = asyncio.create_task(g.ask(BOUNDED, _serialized("gate")))
        await g.backend.entered.wait()
        assert g.gate.in_flight == 1
        second = await g.ask(service, _serialized("x"))
        g.backend.release.set()
        assert await busy == grpc.StatusCode.OK
        status = second
    assert status == (grpc.StatusCode.UNAVAILABLE if service == BOUNDED else grpc.StatusCode.OK)


async def test_streams_are_checked_but_not_counted_in_flight() -> None:
    async with gated(Gate(max_concurrent=1)) as g:
        watch = g.channel.unary_stream(f"/{BOUNDED}/Watch")
        answers = [a async for a in watch(_serialized("x"), metadata=TOKEN, timeout=30)]
        assert len(answers) == 2 and g.gate.in_flight == 0
        g.gate.start_draining()
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in watch(_serialized("x"), metadata=TOKEN, timeout=30):
                pass
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_refusal_held_into_the_shutdown_is_unavailable_and_the_next_call_never_lands() -> (
    None
):
    """The drain's last step (:func:`gateway.drain.shut_down`) on a real server: a call refused
    while refusals are held gets no answer (its client sends nothing more) until the shutdown
    has begun; then it is UNAVAILABLE, and the client's next call finds no server (refused by
    the transport) — neither is CANCELLED."""

    gate, backend = Gate(), Backend()
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    register(server, [GrpcService(FREE, "test", _handlers(backend))], gate, None)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        g = Gated(gate, backend, channel)
        assert await g.ask(FREE, _serialized("x")) == grpc.StatusCode.OK
        gate.start_draining()
        gate.hold_refusals()
        arrived = gate.last_arrival
        held = asyncio.create_task(g.ask(FREE, _serialized("x")))
        for _ in range(3000):  # bounded: the call reaches the server
            if gate.last_arrival > arrived:
                break
            await asyncio.sleep(0.01)
        finished, _ = await asyncio.wait({held}, timeout=0.05)
        assert not finished, "a held refusal was answered before the shutdown"
        await shut_down(gate, [server.stop(5.0)], hurry=asyncio.Event(), quiet_s=0.0)
        assert await held == grpc.StatusCode.UNAVAILABLE
        assert g.last_error == "the server is shutting down; retry on another replica"
        assert await g.ask(FREE, _serialized("x")) == grpc.StatusCode.UNAVAILABLE


async def test_large_answers_count_against_the_budget_until_their_call_ends() -> None:
    budget = MemoryBudget(3 * HELD_ANSWER_COPIES * HELD_ANSWER_BYTES)
    answer = b"x" * HELD_ANSWER_BYTES

    async def predict(request: Any, context: Any) -> bytes:
        return answer if request == b"big" else b"small"

    gate = Gate(budget=budget)
    handler = gate.wrap(
        BOUNDED, "Predict", grpc.unary_unary_rpc_method_handler(predict), bounded=True
    )
    unread = [FakeContext() for _ in range(3)]
    for context in unread:  # three answers nobody reads fill the budget
        assert await handler.unary_unary(b"big", context) == answer
    assert budget.held_bytes == 3 * HELD_ANSWER_COPIES * HELD_ANSWER_BYTES
    refused = FakeContext()
    with pytest.raises(grpc.aio.AbortError) as caught:
        await handler.unary_unary(b"big", refused)
    frames = list(traceback.walk_tb(caught.value.__traceback__))[1:]  # past this test's
    kept = [value for frame, _ in frames for value in frame.f_locals.values()]
    assert not any(value is answer for value in kept)  # grpc keeps the abort, not the answer
    assert refused.status is not None
    assert refused.status[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "--max_inflight_bytes" in refused.status[1]
    assert await handler.unary_unary(b"small", FakeContext()) == b"small"  # small ones are not held
    unread[0].end()  # an answer sent: its bytes come back
    assert budget.held_bytes == 2 * HELD_ANSWER_COPIES * HELD_ANSWER_BYTES
    assert await handler.unary_unary(b"big", FakeContext()) == answer
