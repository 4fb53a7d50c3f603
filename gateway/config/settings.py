"""The one typed settings object of the gateway, fed by tensorflow_model_server's flags.

Every field is named after its command-line flag (``--port`` → :attr:`Settings.port`) and carries
its unit, default and reason in ``dataclasses.fields(Settings)[i].metadata["doc"]`` (also the
``--help`` text). TF Serving's defaults are kept unless the field says otherwise. The rules on
the fields (each one's range, then the rules across fields) run on construction; the derived
values (parsed lists, bytes from MiB) are properties.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.config.model_runtimes import RuntimeChoice, parse_model_runtimes
from gateway.config.model_workers import parse_model_workers
from gateway.config.settings_field import MIB, OS_CHOSEN_PORT
from gateway.config.settings_listen import ListenSettings
from gateway.config.settings_models import ModelSettings
from gateway.config.settings_runtime import RuntimeSettings
from gateway.config.validation import (
    INLINE_RUNS,
    INT32_MAX,
    LOG_FORMATS,
    MAX_IMAGE_PIXELS,
    SettingsError,
    check_choice,
    check_range,
    parse_grpc_channel_arguments,
    split_dirs,
)


@dataclass(frozen=True)
class Settings(RuntimeSettings, ModelSettings, ListenSettings):
    """Everything the gateway is configured with; immutable, validated on construction.

    Build it with :func:`gateway.config.flags.parse_flags` from a command line, or directly in tests
    (``Settings(model_base_path="/models/m")``). Either ``model_base_path`` or
    ``model_config_file`` is required, as in TF Serving. The fields come in three groups, each in
    its module: :class:`~gateway.config.settings_listen.ListenSettings` (the front door),
    :class:`~gateway.config.settings_models.ModelSettings` (what is served, and batching) and
    :class:`~gateway.config.settings_runtime.RuntimeSettings` (workers, lifecycle, limits, logs);
    :func:`dataclasses.fields` lists them all, in that order.
    """

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def grpc_channel_options(self) -> tuple[tuple[str, int | str], ...]:
        """``grpc_channel_arguments`` as gRPC server options, in order."""
        return parse_grpc_channel_arguments(self.grpc_channel_arguments)

    @property
    def model_worker_counts(self) -> Mapping[str, int]:
        """``model_workers`` parsed: model name (or ``*``) → worker count."""
        return parse_model_workers(self.model_workers)

    @property
    def model_runtime_choices(self) -> Mapping[str, RuntimeChoice]:
        """``model_runtimes`` parsed: model name (or ``*``) → runtime and precision."""
        return parse_model_runtimes(self.model_runtimes)

    @property
    def saved_model_tag_set(self) -> frozenset[str]:
        """``saved_model_tags`` split on commas."""
        return frozenset(tag.strip() for tag in self.saved_model_tags.split(","))

    @property
    def worker_arena_bytes(self) -> int:
        """``worker_arena_mb`` in bytes (the size of each of a worker's input and output areas)."""
        return self.worker_arena_mb * MIB


def _validate(s: Settings) -> None:
    """Every rule on settings, field by field and then across fields."""
    check_range("port", s.port, 0, 65535)
    check_range("rest_api_port", s.rest_api_port, OS_CHOSEN_PORT, 65535)
    check_range("rest_api_timeout_in_ms", s.rest_api_timeout_in_ms, 1, INT32_MAX)
    check_range("grpc_max_threads", s.grpc_max_threads, 1, INT32_MAX)
    check_range("max_message_bytes", s.max_message_bytes, 1, INT32_MAX)
    check_range("rest_api_max_body_bytes", s.rest_api_max_body_bytes, 1, INT32_MAX)
    check_range("rest_api_max_json_bytes", s.rest_api_max_json_bytes, 1, INT32_MAX)
    check_range("model_config_file_poll_wait_seconds", s.model_config_file_poll_wait_seconds, 0)
    check_range("file_system_poll_wait_seconds", s.file_system_poll_wait_seconds, 0)
    check_range("max_num_load_retries", s.max_num_load_retries, 0)
    check_range("model_cache_max_bytes", s.model_cache_max_bytes, 0)
    check_range("num_load_threads", s.num_load_threads, 0)
    check_range("num_request_iterations_for_warmup", s.num_request_iterations_for_warmup, 0)
    try:
        parse_model_workers(s.model_workers)
        parse_model_runtimes(s.model_runtimes)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    check_range("tensorflow_session_parallelism", s.tensorflow_session_parallelism, 0)
    check_range("tensorflow_intra_op_parallelism", s.tensorflow_intra_op_parallelism, 0)
    check_range("tensorflow_inter_op_parallelism", s.tensorflow_inter_op_parallelism, 0)
    check_range("workers", s.workers, 0)
    check_range("frontends", s.frontends, 0)
    check_range("worker_arena_mb", s.worker_arena_mb, 1)
    check_range("max_tensor_elements", s.max_tensor_elements, 1)
    check_range("max_request_bytes", s.max_request_bytes, 1)
    check_range("grpc_max_pending_requests", s.grpc_max_pending_requests, 0, INT32_MAX // 2)
    check_range("max_inflight_bytes", s.max_inflight_bytes, 1)
    check_range("max_image_pixels", s.max_image_pixels, 1, MAX_IMAGE_PIXELS)
    check_range("max_images_per_request", s.max_images_per_request, 1)
    check_range("image_decode_threads", s.image_decode_threads, 0)
    check_range("request_log_max_pending", s.request_log_max_pending, 1, INT32_MAX)
    check_range("request_log_max_pending_bytes", s.request_log_max_pending_bytes, 1)
    check_range("request_log_max_file_bytes", s.request_log_max_file_bytes, 1)
    check_range("request_log_max_total_bytes", s.request_log_max_total_bytes, 0)
    if 0 < s.request_log_max_total_bytes < s.request_log_max_file_bytes:
        raise SettingsError(
            "request_log_max_total_bytes must be 0 (no cap) or >= request_log_max_file_bytes "
            f"({s.request_log_max_file_bytes}), got {s.request_log_max_total_bytes}"
        )
    for name in ("management_base_path_dirs", "management_log_dirs"):
        for directory in split_dirs(getattr(s, name)):
            if not directory.startswith("/"):
                raise SettingsError(f"{name} lists {directory!r}, which is not an absolute path")
    check_range("max_concurrent_requests", s.max_concurrent_requests, 0)
    check_range("max_queue_delay_ms", s.max_queue_delay_ms, 0, INT32_MAX)
    check_range("rest_api_max_connections", s.rest_api_max_connections, 1, INT32_MAX)
    check_range("rest_api_max_header_bytes", s.rest_api_max_header_bytes, 1024, INT32_MAX)
    check_range(
        "rest_api_max_connections_per_peer", s.rest_api_max_connections_per_peer, 0, INT32_MAX
    )
    check_range("grpc_max_connections", s.grpc_max_connections, 1, INT32_MAX)
    check_range("grpc_max_concurrent_streams", s.grpc_max_concurrent_streams, 1, INT32_MAX)
    check_range("ready_fd", s.ready_fd, -1)
    check_range("shutdown_grace_seconds", s.shutdown_grace_seconds, 0)
    for name in (
        "worker_ping_interval_seconds",
        "worker_ping_timeout_seconds",
        "frontend_ping_interval_seconds",
        "frontend_ping_timeout_seconds",
        "rest_api_header_timeout_seconds",
        "rest_api_body_timeout_seconds",
        "rest_api_idle_timeout_seconds",
        "rest_api_write_timeout_seconds",
        "grpc_idle_timeout_seconds",
    ):
        value = getattr(s, name)
        check_range(name, value, 0)
        if value <= 0:
            raise SettingsError(f"{name} must be > 0, got {value}")
    if not s.model_name:
        raise SettingsError("model_name must not be empty")
    check_choice("log_format", s.log_format, LOG_FORMATS)
    check_choice("inline_runs", s.inline_runs, INLINE_RUNS)
    check_range("inline_budget_mb", s.inline_budget_mb, 0)
    if any(not tag for tag in s.saved_model_tag_set):
        raise SettingsError(
            f"saved_model_tags must be comma-separated non-empty tags, got {s.saved_model_tags!r}"
        )
    parse_grpc_channel_arguments(s.grpc_channel_arguments)

    for name in ("grpc_bind_address", "rest_api_bind_address"):
        address = getattr(s, name)
        if address:
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise SettingsError(
                    f'{name} must be an IP address (or "" for every interface), got {address!r}'
                ) from None
    if s.rest_api_enable_tls and not s.ssl_config_file:
        raise SettingsError("rest_api_enable_tls needs ssl_config_file (its key and certificate)")
    if s.rest_api_port != 0 and s.rest_api_port == s.port:
        raise SettingsError(
            f"rest_api_port must differ from port, both are {s.port} (use 0 to disable REST)"
        )
    if not s.model_base_path and not s.model_config_file:
        raise SettingsError("either model_base_path or model_config_file must be set")
    if s.batching_parameters_file and not s.enable_batching:
        raise SettingsError("batching_parameters_file is set without enable_batching")
    if (
        s.tensorflow_session_parallelism > 0
        and s.tensorflow_intra_op_parallelism > 0
        and s.tensorflow_inter_op_parallelism > 0
    ):
        raise SettingsError(
            "set either tensorflow_session_parallelism or tensorflow_intra_op_parallelism / "
            "tensorflow_inter_op_parallelism, not all three"
        )
