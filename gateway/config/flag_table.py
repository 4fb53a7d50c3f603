"""The catalogue of tensorflow_model_server's flags, and tensorgate's own.

Every flag of upstream ``tensorflow_serving/model_servers/main.cc`` is listed, in upstream's order,
with its kind and status:

- *implemented*: a :class:`~gateway.config.settings.Settings` field of the same name;
- *no effect*: tuning knobs of TF Serving's own thread pools and caches that have nothing to act
  on here; any value is accepted and an INFO line says so;
- *not supported yet*: accepted only with TF Serving's default value; any other value is refused.

"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["int32", "int64", "float", "bool", "string"]
Status = Literal["implemented", "no_effect", "unsupported", "version"]


@dataclass(frozen=True)
class FlagSpec:
    """One command-line flag.

    ``default``: TF Serving's default (for implemented flags, the :class:`Settings` default is
    used instead). ``default_per_cpu``: when > 0, the default is this many times
    :func:`available_cpus` (TF Serving's ``N * NumSchedulableCPUs()`` defaults).
    ``note``: for *no effect* / *not supported* flags, what TF Serving does with it.
    """

    name: str
    kind: Kind
    status: Status
    default: bool | int | float | str = ""
    default_per_cpu: int = 0
    note: str = ""


def _impl(name: str, kind: Kind) -> FlagSpec:
    return FlagSpec(name, kind, "implemented")


def _no_effect(
    name: str, kind: Kind, default: bool | int | str, note: str, per_cpu: int = 0
) -> FlagSpec:
    return FlagSpec(name, kind, "no_effect", default, per_cpu, note)


def _unsupported(
    name: str, kind: Kind, default: bool | int | float | str, note: str, per_cpu: int = 0
) -> FlagSpec:
    return FlagSpec(name, kind, "unsupported", default, per_cpu, note)


FLAGS: dict[str, FlagSpec] = {
    spec.name: spec
    for spec in (
        # Upstream main.cc, in its order.
        _impl("port", "int32"),
        _impl("grpc_socket_path", "string"),
        _impl("rest_api_port", "int32"),
        _no_effect(
            "rest_api_num_threads",
            "int32",
            0,
            "threads of TF Serving's HTTP server; tensorgate serves REST on its event loop",
            per_cpu=4,
        ),
        _impl("rest_api_timeout_in_ms", "int32"),
        _impl("rest_api_enable_cors_support", "bool"),
        _impl("enable_batching", "bool"),
        _impl("allow_version_labels_for_unavailable_models", "bool"),
        _impl("batching_parameters_file", "string"),
        _impl("enable_per_model_batching_parameters", "bool"),
        _impl("model_config_file", "string"),
        _impl("model_config_file_poll_wait_seconds", "int32"),
        _impl("model_name", "string"),
        _impl("model_base_path", "string"),
        _impl("num_load_threads", "int32"),
        _no_effect(
            "num_unload_threads", "int32", 0, "size of TF Serving's servable-unloading thread pool"
        ),
        _impl("max_num_load_retries", "int32"),
        _impl("load_retry_interval_micros", "int64"),
        _impl("file_system_poll_wait_seconds", "int32"),
        _no_effect(
            "flush_filesystem_caches",
            "bool",
            True,
            "flushes TF's file-system caches after loads to save memory",
        ),
        _impl("tensorflow_session_parallelism", "int64"),
        _unsupported(
            "tensorflow_session_config_file",
            "string",
            "",
            "text-format TensorFlow ConfigProto for sessions",
        ),
        _impl("tensorflow_intra_op_parallelism", "int64"),
        _impl("tensorflow_inter_op_parallelism", "int64"),
        _unsupported("use_alts_credentials", "bool", False, "Google ALTS credentials for gRPC"),
        _impl("ssl_config_file", "string"),
        _unsupported(
            "platform_config_file",
            "string",
            "",
            "text-format PlatformConfigMap replacing the TensorFlow platform config",
        ),
        _unsupported(
            "per_process_gpu_memory_fraction",
            "float",
            0.0,
            "fraction of GPU memory TensorFlow allocates (0 = automatic)",
        ),
        _impl("saved_model_tags", "string"),
        _impl("grpc_channel_arguments", "string"),
        _impl("grpc_max_threads", "int32"),
        _impl("enable_model_warmup", "bool"),
        _impl("num_request_iterations_for_warmup", "int32"),
        FlagSpec("version", "bool", "version", False, 0, "print the version and exit"),
        _impl("monitoring_config_file", "string"),
        _no_effect(
            "remove_unused_fields_from_bundle_metagraph",
            "bool",
            True,
            "drops unused MetaGraphDef fields after a TensorFlow load to save memory",
        ),
        _unsupported(
            "prefer_tflite_model", "bool", False, "serve model.tflite instead of saved_model.pb"
        ),
        _unsupported(
            "num_tflite_pools", "int32", 0, "TF Lite interpreter pools per model", per_cpu=1
        ),
        _unsupported(
            "num_tflite_interpreters_per_pool", "int32", 1, "TF Lite interpreters in each pool"
        ),
        _impl("enable_signature_method_name_check", "bool"),
        _unsupported("xla_cpu_compilation_enabled", "bool", False, "XLA:CPU JIT compilation"),
        _unsupported(
            "xla_gpu_compilation_enabled", "bool", False, "XLA:CPU and XLA:GPU JIT compilation"
        ),
        _unsupported("enable_profiler", "bool", True, "TensorFlow profiler gRPC service"),
        _unsupported(
            "thread_pool_factory_config_file",
            "string",
            "",
            "text-format ThreadPoolConfig for TensorFlow's inference thread pools",
        ),
        _unsupported("mixed_precision", "string", "", "mixed precision mode of TensorFlow"),
        _unsupported("skip_initialize_tpu", "bool", False, "skips TPU system initialisation"),
        _no_effect(
            "enable_grpc_healthcheck_service",
            "bool",
            False,
            "tensorgate always serves grpc.health.v1 (per-model readiness for probes)",
        ),
        _impl("enable_serialization_as_tensor_content", "bool"),
        # tensorgate's own flags.
        _impl("workers", "int32"),
        _impl("frontends", "int32"),
        _impl("max_message_bytes", "int64"),
        _impl("rest_api_max_body_bytes", "int64"),
        _impl("rest_api_max_json_bytes", "int64"),
        _impl("worker_arena_mb", "int32"),
        _impl("inline_runs", "string"),
        _impl("inline_budget_mb", "int32"),
        _impl("worker_ping_interval_seconds", "float"),
        _impl("worker_ping_timeout_seconds", "float"),
        _impl("frontend_ping_interval_seconds", "float"),
        _impl("frontend_ping_timeout_seconds", "float"),
        _impl("max_tensor_elements", "int64"),
        _impl("shutdown_grace_seconds", "float"),
        _impl("ready_fd", "int32"),
        _impl("enable_model_management_api", "bool"),
        _impl("model_workers", "string"),
        _impl("model_runtimes", "string"),
        _impl("log_format", "string"),
        _impl("max_request_bytes", "int64"),
        _impl("max_inflight_bytes", "int64"),
        _impl("max_image_pixels", "int64"),
        _impl("max_images_per_request", "int32"),
        _impl("image_decode_threads", "int32"),
        _impl("grpc_bind_address", "string"),
        _impl("rest_api_bind_address", "string"),
        _impl("rest_api_enable_tls", "bool"),
        _impl("max_concurrent_requests", "int32"),
        _impl("max_queue_delay_ms", "int32"),
        _impl("rest_api_max_connections", "int32"),
        _impl("rest_api_header_timeout_seconds", "float"),
        _impl("rest_api_body_timeout_seconds", "float"),
        _impl("rest_api_idle_timeout_seconds", "float"),
        _impl("rest_api_write_timeout_seconds", "float"),
        _impl("rest_api_max_header_bytes", "int32"),
        _impl("rest_api_max_connections_per_peer", "int32"),
        _impl("grpc_max_connections", "int32"),
        _impl("grpc_max_concurrent_streams", "int32"),
        _impl("grpc_idle_timeout_seconds", "float"),
        _impl("grpc_max_pending_requests", "int32"),
        _impl("auth_token_file", "string"),
        _impl("auth_open_paths", "string"),
        _impl("enable_server_timing", "bool"),
        _impl("request_log_max_pending", "int32"),
        _impl("request_log_max_file_bytes", "int64"),
        _impl("request_log_max_pending_bytes", "int64"),
        _impl("request_log_max_total_bytes", "int64"),
        _impl("auth_admin_token_file", "string"),
        _impl("management_base_path_dirs", "string"),
        _impl("management_log_dirs", "string"),
        _impl("enable_api_docs", "bool"),
        _impl("model_cache_dir", "string"),
        _impl("model_cache_max_bytes", "int64"),
    )
}
