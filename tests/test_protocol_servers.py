"""gateway.protocol_servers: the gRPC server's channel options that tensorgate's flags set."""

from __future__ import annotations

import pytest

from gateway.config.flags import FlagError, parse_flags
from gateway.protocol_servers import KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS, grpc_options

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
