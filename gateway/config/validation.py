"""The rules on settings: each field's range, then the rules across fields.

:func:`validate` runs when a :class:`~gateway.config.settings.Settings` is built; a
:class:`SettingsError` names the field, the rule and the value, e.g. ``port must be in 0..65535,
got 70000``.
"""

from __future__ import annotations

import ipaddress
import math
import re
from typing import TYPE_CHECKING

from gateway.config.model_runtimes import parse_model_runtimes
from gateway.config.model_workers import parse_model_workers
from gateway.config.settings_field import OS_CHOSEN_PORT

if TYPE_CHECKING:
    from gateway.config.settings import Settings

INT32_MAX = 2**31 - 1
LOG_FORMATS = ("text", "json")
INLINE_RUNS = ("auto", "always", "never")
"""--inline_runs: where light models run (:mod:`gateway.parallel.inline_cost`)."""


class SettingsError(ValueError):
    """A setting is out of range or contradicts another one; the message says which and why."""


_INT32 = re.compile(r"[+-]?\d+")


def parse_grpc_channel_arguments(text: str) -> tuple[tuple[str, int | str], ...]:
    """Split ``key=value,key=value`` into gRPC options; int32-looking values become ints.

    Empty items (a trailing comma) are skipped; an item without ``=`` or with an empty key raises
    :class:`SettingsError`. A value may itself contain ``=`` (split on the first one).
    """
    options: list[tuple[str, int | str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingsError(
                f"grpc_channel_arguments must be comma-separated key=value pairs, got {item!r}"
            )
        stripped = value.strip()
        if _INT32.fullmatch(stripped) and -(2**31) <= int(stripped) <= INT32_MAX:
            options.append((key, int(stripped)))
        else:
            options.append((key, value))
    return tuple(options)


def _check_range(name: str, value: float, low: int, high: int | None = None) -> None:
    """Raise unless ``low <= value <= high`` (``high`` None: no upper bound)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SettingsError(f"{name} must be a finite number, got {value}")
    if high is None:
        if value < low:
            raise SettingsError(f"{name} must be >= {low}, got {value}")
    elif not low <= value <= high:
        raise SettingsError(f"{name} must be in {low}..{high}, got {value}")


def validate(s: Settings) -> None:
    """Every rule on settings, field by field and then across fields."""
    _check_range("port", s.port, 0, 65535)
    _check_range("rest_api_port", s.rest_api_port, OS_CHOSEN_PORT, 65535)
    _check_range("rest_api_timeout_in_ms", s.rest_api_timeout_in_ms, 1, INT32_MAX)
    _check_range("grpc_max_threads", s.grpc_max_threads, 1, INT32_MAX)
    _check_range("max_message_bytes", s.max_message_bytes, 1, INT32_MAX)
    _check_range("rest_api_max_body_bytes", s.rest_api_max_body_bytes, 1, INT32_MAX)
    _check_range("rest_api_max_json_bytes", s.rest_api_max_json_bytes, 1, INT32_MAX)
    _check_range("model_config_file_poll_wait_seconds", s.model_config_file_poll_wait_seconds, 0)
    _check_range("file_system_poll_wait_seconds", s.file_system_poll_wait_seconds, 0)
    _check_range("max_num_load_retries", s.max_num_load_retries, 0)
    _check_range("num_load_threads", s.num_load_threads, 0)
    _check_range("num_request_iterations_for_warmup", s.num_request_iterations_for_warmup, 0)
    try:
        parse_model_workers(s.model_workers)
        parse_model_runtimes(s.model_runtimes)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    _check_range("tensorflow_session_parallelism", s.tensorflow_session_parallelism, 0)
    _check_range("tensorflow_intra_op_parallelism", s.tensorflow_intra_op_parallelism, 0)
    _check_range("tensorflow_inter_op_parallelism", s.tensorflow_inter_op_parallelism, 0)
    _check_range("workers", s.workers, 0)
    _check_range("frontends", s.frontends, 0)
    _check_range("worker_arena_mb", s.worker_arena_mb, 1)
    _check_range("max_tensor_elements", s.max_tensor_elements, 1)
    _check_range("max_request_bytes", s.max_request_bytes, 1)
    _check_range("grpc_max_pending_requests", s.grpc_max_pending_requests, 0, INT32_MAX // 2)
    _check_range("max_inflight_bytes", s.max_inflight_bytes, 1)
    _check_range("request_log_max_pending", s.request_log_max_pending, 1, INT32_MAX)
    _check_range("request_log_max_file_bytes", s.request_log_max_file_bytes, 1)
    _check_range("max_concurrent_requests", s.max_concurrent_requests, 0)
    _check_range("max_queue_delay_ms", s.max_queue_delay_ms, 0, INT32_MAX)
    _check_range("rest_api_max_connections", s.rest_api_max_connections, 1, INT32_MAX)
    _check_range("grpc_max_connections", s.grpc_max_connections, 1, INT32_MAX)
    _check_range("ready_fd", s.ready_fd, -1)
    _check_range("shutdown_grace_seconds", s.shutdown_grace_seconds, 0)
    for name in (
        "worker_ping_interval_seconds",
        "worker_ping_timeout_seconds",
        "frontend_ping_interval_seconds",
        "frontend_ping_timeout_seconds",
        "rest_api_header_timeout_seconds",
        "rest_api_body_timeout_seconds",
        "rest_api_idle_timeout_seconds",
        "grpc_idle_timeout_seconds",
    ):
        value = getattr(s, name)
        _check_range(name, value, 0)
        if value <= 0:
            raise SettingsError(f"{name} must be > 0, got {value}")
    if not s.model_name:
        raise SettingsError("model_name must not be empty")
    if s.log_format not in LOG_FORMATS:
        raise SettingsError(
            f"log_format must be one of {', '.join(LOG_FORMATS)}, got {s.log_format!r}"
        )
    if s.inline_runs not in INLINE_RUNS:
        raise SettingsError(
            f"inline_runs must be one of {', '.join(INLINE_RUNS)}, got {s.inline_runs!r}"
        )
    _check_range("inline_budget_mb", s.inline_budget_mb, 0)
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
