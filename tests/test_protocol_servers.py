"""gateway.protocol_servers: the gRPC server's channel options that tensorgate's flags set, and
health watches that end."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway.config.flags import FlagError, parse_flags
from gateway.protocol_servers import (
    KEEPALIVE_TIME_MS,
    KEEPALIVE_TIMEOUT_MS,
    BoundedHealth,
    grpc_options,
)

BASE = ["--model_base_path=/models/m"]


def test_pending_limits_follow_the_flag_and_user_arguments_still_come_last() -> None:
    options = grpc_options(
        parse_flags(
            [
                *BASE,
                "--grpc_max_pending_requests=16",
                "--grpc_channel_arguments=grpc.server.max_pending_requests_hard_limit=40",
            ]
        )
    )
    assert ("grpc.server.max_pending_requests", 16) in options
    hard = [value for key, value in options if key == "grpc.server.max_pending_requests_hard_limit"]
    assert hard == [32, 40]  # ours, then the user's, which grpc applies last


def test_without_the_flag_grpc_keeps_its_own_pending_limits() -> None:
    keys = {key for key, _ in grpc_options(parse_flags(BASE))}
    assert not keys & {
        "grpc.server.max_pending_requests",
        "grpc.server.max_pending_requests_hard_limit",
    }


def test_a_negative_pending_limit_is_refused() -> None:
    with pytest.raises(FlagError, match=r"grpc_max_pending_requests must be in 0\.\."):
        parse_flags([*BASE, "--grpc_max_pending_requests=-1"])


def test_connections_are_pinged_so_dead_peers_free_their_slot() -> None:
    options = dict(grpc_options(parse_flags(BASE)))
    assert options["grpc.keepalive_time_ms"] == KEEPALIVE_TIME_MS
    assert options["grpc.keepalive_timeout_ms"] == KEEPALIVE_TIMEOUT_MS
    assert options["grpc.max_connection_idle_ms"] == 300_000


def test_a_health_watch_ends_so_its_connection_can_go_idle() -> None:
    """An open Watch keeps its connection busy for good (grpc closes only idle connections): the
    stream ends, OK, after the idle timeout, with the status it had sent."""

    async def scenario() -> list[int]:
        server = grpc.aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(BoundedHealth(0.2), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                call = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60)
                statuses = [answer.status async for answer in call]
                assert await call.code() == grpc.StatusCode.OK
                return statuses
        finally:
            await server.stop(0)

    assert asyncio.run(scenario()) == [health_pb2.HealthCheckResponse.SERVING]
