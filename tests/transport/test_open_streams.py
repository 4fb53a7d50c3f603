"""Streams a client may hold open on a real grpc.aio server end after their bound, OK, so that
grpc can close a connection that holds nothing else (it closes idle connections only)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from gateway.transport.open_streams import BoundedHealth, BoundedReflection

STREAM_S = 0.2


async def _serving(server: grpc.aio.Server) -> str:
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return f"127.0.0.1:{port}"


async def test_a_health_watch_ends_with_the_status_it_sent() -> None:
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(BoundedHealth(STREAM_S), server)
    target = await _serving(server)
    try:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            call = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60)
            statuses = [answer.status async for answer in call]
            assert await call.code() == grpc.StatusCode.OK
    finally:
        await server.stop(0)
    assert statuses == [health_pb2.HealthCheckResponse.SERVING]


async def test_a_reflection_stream_held_open_ends_after_answering() -> None:
    server = grpc.aio.server()
    reflecting = BoundedReflection(["grpc.health.v1.Health"], STREAM_S)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(reflecting, server)
    target = await _serving(server)
    held = asyncio.Event()

    async def requests() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")
        await held.wait()  # then the client keeps the stream open, sending nothing

    try:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            call = stub.ServerReflectionInfo(requests(), timeout=60)
            names = [
                service.name
                async for answer in call
                for service in answer.list_services_response.service
            ]
            assert await call.code() == grpc.StatusCode.OK
    finally:
        held.set()
        await server.stop(0)
    assert names == ["grpc.health.v1.Health"]
