"""The front door's settings: TF Serving's defaults where it has the flag, bounded ones where
tensorgate adds a limit."""

from __future__ import annotations

import dataclasses

from gateway.config.machine import available_cpus
from gateway.config.settings_field import MIB
from gateway.config.settings_listen import ListenSettings


def test_grpc_and_rest_listen_where_tf_serving_does() -> None:
    listen = ListenSettings()
    assert (listen.port, listen.grpc_socket_path, listen.grpc_bind_address) == (8500, "", "")
    assert (listen.rest_api_port, listen.rest_api_bind_address) == (0, "")  # REST off
    assert listen.rest_api_timeout_in_ms == 30_000
    assert not listen.rest_api_enable_tls and not listen.rest_api_enable_cors_support
    assert listen.grpc_max_threads == 4 * available_cpus()


def test_every_size_and_count_is_bounded_by_default() -> None:
    listen = ListenSettings()
    assert listen.max_message_bytes == listen.rest_api_max_body_bytes == 64 * MIB
    assert listen.max_concurrent_requests == 1024
    assert listen.rest_api_max_connections == listen.grpc_max_connections == 1024
    assert (
        listen.rest_api_header_timeout_seconds,
        listen.rest_api_body_timeout_seconds,
        listen.rest_api_idle_timeout_seconds,
        listen.grpc_idle_timeout_seconds,
    ) == (10.0, 30.0, 75.0, 300.0)
    assert listen.grpc_max_pending_requests == 0  # grpc's own limits


def test_no_token_and_no_tls_unless_configured_and_probes_stay_open() -> None:
    listen = ListenSettings()
    assert (listen.auth_token_file, listen.ssl_config_file) == ("", "")
    open_paths = listen.auth_open_paths.split(",")
    assert {"/healthz", "/readyz", "/grpc.health.v1.Health/"} <= set(open_paths)


def test_every_field_is_documented() -> None:
    for settings_field in dataclasses.fields(ListenSettings):
        assert len(settings_field.metadata["doc"]) > 30, settings_field.name
