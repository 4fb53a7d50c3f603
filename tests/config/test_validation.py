"""The rules on settings, applied directly: each field's range, finiteness, addresses, and the
rules across fields; gRPC channel arguments parsed by TF Serving's rule."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.settings import Settings
from gateway.config.validation import INT32_MAX, SettingsError, parse_grpc_channel_arguments

BASE: dict[str, Any] = {"model_base_path": "/m"}


def test_grpc_channel_arguments_follow_tf_serving_int_rule() -> None:
    assert parse_grpc_channel_arguments("") == ()
    assert parse_grpc_channel_arguments(
        "grpc.max_connection_age_ms=2000, grpc.primary_user_agent=tg,grpc.x=99999999999,"
    ) == (
        ("grpc.max_connection_age_ms", 2000),
        ("grpc.primary_user_agent", "tg"),
        ("grpc.x", "99999999999"),
    )
    with pytest.raises(SettingsError, match="got '=1'"):
        parse_grpc_channel_arguments("=1")


@pytest.mark.parametrize(
    ("text", "item"),
    [("novalue", "novalue"), ("a=1,b", "b"), (" =x", " =x")],
)
def test_channel_arguments_without_a_key_and_value_are_refused(text: str, item: str) -> None:
    with pytest.raises(SettingsError, match=f"key=value pairs, got {item!r}$"):
        parse_grpc_channel_arguments(text)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"port": -1}, "port must be in 0..65535, got -1"),
        ({"rest_api_port": 65536}, "rest_api_port must be in -1..65535, got 65536"),
        ({"rest_api_port": -2}, "rest_api_port must be in -1..65535, got -2"),
        ({"grpc_max_threads": 0}, f"grpc_max_threads must be in 1..{INT32_MAX}, got 0"),
        ({"max_message_bytes": 2**31}, f"max_message_bytes must be in 1..{INT32_MAX}"),
        ({"workers": -1}, "workers must be >= 0, got -1"),
        ({"worker_arena_mb": 0}, "worker_arena_mb must be >= 1, got 0"),
        ({"grpc_max_pending_requests": INT32_MAX}, "grpc_max_pending_requests must be in 0.."),
        ({"max_queue_delay_ms": -1}, "max_queue_delay_ms must be in 0.."),
        ({"grpc_max_connections": 0}, "grpc_max_connections must be in 1.."),
        ({"ready_fd": -2}, "ready_fd must be >= -1, got -2"),
        ({"shutdown_grace_seconds": float("inf")}, "must be a finite number, got inf"),
        ({"grpc_idle_timeout_seconds": 0.0}, "grpc_idle_timeout_seconds must be > 0, got 0.0"),
        ({"rest_api_body_timeout_seconds": -1.0}, "must be >= 0, got -1.0"),
        ({"model_workers": "a=x"}, "model_workers gives a 'x'; N must be >= 1"),
        ({"log_format": "xml"}, "log_format must be one of text, json, got 'xml'"),
        ({"saved_model_tags": ",serve"}, "saved_model_tags must be comma-separated non-empty"),
        ({"model_name": ""}, "model_name must not be empty"),
    ],
)
def test_each_field_is_checked_against_its_range(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings(**BASE, **fields)
    assert message in str(raised.value)


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "0.0.0.0", ""])
def test_ip_literals_and_every_interface_are_addresses(address: str) -> None:
    settings = Settings(**BASE, grpc_bind_address=address, rest_api_bind_address=address)
    assert settings.grpc_bind_address == address


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model_base_path": ""}, "either model_base_path or model_config_file must be set"),
        ({"rest_api_port": 8500}, "rest_api_port must differ from port, both are 8500"),
        ({"port": 0, "rest_api_port": 0}, None),  # REST off
        ({"port": 0, "rest_api_port": -1}, None),  # both chosen by the OS: no clash
        ({"rest_api_enable_tls": True}, "rest_api_enable_tls needs ssl_config_file"),
        ({"rest_api_enable_tls": True, "ssl_config_file": "/s"}, None),
        ({"batching_parameters_file": "/b"}, "batching_parameters_file is set without enable_"),
        ({"batching_parameters_file": "/b", "enable_batching": True}, None),
        (
            {
                "tensorflow_session_parallelism": 1,
                "tensorflow_intra_op_parallelism": 1,
                "tensorflow_inter_op_parallelism": 1,
            },
            "not all three",
        ),
        ({"tensorflow_session_parallelism": 1, "tensorflow_intra_op_parallelism": 1}, None),
    ],
)
def test_rules_across_fields(fields: dict[str, Any], message: str | None) -> None:
    if message is None:
        Settings(**{**BASE, **fields})
        return
    with pytest.raises(SettingsError, match=message):
        Settings(**{**BASE, **fields})


def test_a_config_file_alone_is_a_model_source() -> None:
    assert Settings(model_config_file="/c").model_config_file == "/c"
