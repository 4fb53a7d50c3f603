"""The flag catalogue: every flag of upstream's main.cc, in its order, with TF Serving's defaults;
tensorgate's own after them."""

from __future__ import annotations

import dataclasses
import typing

from gateway.config.flag_table import FLAGS, Kind, Status
from gateway.config.flags import flag_default
from gateway.config.machine import available_cpus
from gateway.config.settings import Settings

# Every flag of upstream tensorflow_serving/model_servers/main.cc with its default there
# (None: N x NumSchedulableCPUs(), machine-dependent).
UPSTREAM_DEFAULTS: dict[str, object] = {
    "port": 8500,
    "grpc_socket_path": "",
    "rest_api_port": 0,
    "rest_api_num_threads": None,
    "rest_api_timeout_in_ms": 30000,
    "rest_api_enable_cors_support": False,
    "enable_batching": False,
    "allow_version_labels_for_unavailable_models": False,
    "batching_parameters_file": "",
    "enable_per_model_batching_parameters": False,
    "model_config_file": "",
    "model_config_file_poll_wait_seconds": 0,
    "model_name": "default",
    "model_base_path": "",
    "num_load_threads": 0,
    "num_unload_threads": 0,
    "max_num_load_retries": 5,
    "load_retry_interval_micros": 60_000_000,
    "file_system_poll_wait_seconds": 1,
    "flush_filesystem_caches": True,
    "tensorflow_session_parallelism": 0,
    "tensorflow_session_config_file": "",
    "tensorflow_intra_op_parallelism": 0,
    "tensorflow_inter_op_parallelism": 0,
    "use_alts_credentials": False,
    "ssl_config_file": "",
    "platform_config_file": "",
    "per_process_gpu_memory_fraction": 0.0,
    "saved_model_tags": "serve",
    "grpc_channel_arguments": "",
    "grpc_max_threads": None,
    "enable_model_warmup": True,
    "num_request_iterations_for_warmup": 0,
    "version": False,
    "monitoring_config_file": "",
    "remove_unused_fields_from_bundle_metagraph": True,
    "prefer_tflite_model": False,
    "num_tflite_pools": None,
    "num_tflite_interpreters_per_pool": 1,
    "enable_signature_method_name_check": False,
    "xla_cpu_compilation_enabled": False,
    "xla_gpu_compilation_enabled": False,
    "enable_profiler": True,
    "thread_pool_factory_config_file": "",
    "mixed_precision": "",
    "skip_initialize_tpu": False,
    "enable_grpc_healthcheck_service": False,
    "enable_serialization_as_tensor_content": False,
}
TENSORGATE_FLAGS = {
    "workers",
    "frontends",
    "max_message_bytes",
    "rest_api_max_body_bytes",
    "rest_api_max_json_bytes",
    "worker_arena_mb",
    "inline_runs",
    "inline_budget_mb",
    "worker_ping_interval_seconds",
    "worker_ping_timeout_seconds",
    "frontend_ping_interval_seconds",
    "frontend_ping_timeout_seconds",
    "max_tensor_elements",
    "shutdown_grace_seconds",
    "ready_fd",
    "enable_model_management_api",
    "model_workers",
    "model_runtimes",
    "log_format",
    "max_request_bytes",
    "max_inflight_bytes",
    "max_image_pixels",
    "max_images_per_request",
    "image_decode_threads",
    "grpc_bind_address",
    "rest_api_bind_address",
    "rest_api_enable_tls",
    "max_concurrent_requests",
    "max_queue_delay_ms",
    "rest_api_max_connections",
    "rest_api_header_timeout_seconds",
    "rest_api_body_timeout_seconds",
    "rest_api_idle_timeout_seconds",
    "rest_api_write_timeout_seconds",
    "rest_api_max_header_bytes",
    "rest_api_max_connections_per_peer",
    "grpc_max_connections",
    "grpc_max_concurrent_streams",
    "grpc_idle_timeout_seconds",
    "grpc_max_pending_requests",
    "auth_token_file",
    "auth_open_paths",
    "enable_server_timing",
    "request_log_max_pending",
    "request_log_max_file_bytes",
    "request_log_max_pending_bytes",
    "request_log_max_total_bytes",
    "auth_admin_token_file",
    "management_base_path_dirs",
    "management_log_dirs",
    "enable_api_docs",
    "model_cache_dir",
    "model_cache_max_bytes",
}


def test_every_upstream_flag_is_recognised_and_nothing_else() -> None:
    assert set(FLAGS) == set(UPSTREAM_DEFAULTS) | TENSORGATE_FLAGS


def test_defaults_match_tf_serving() -> None:
    for name, upstream in UPSTREAM_DEFAULTS.items():
        if upstream is not None:
            assert flag_default(FLAGS[name]) == upstream, name
    cpus = available_cpus()
    assert flag_default(FLAGS["grpc_max_threads"]) == 4 * cpus
    assert flag_default(FLAGS["rest_api_num_threads"]) == 4 * cpus
    assert flag_default(FLAGS["num_tflite_pools"]) == cpus


def test_upstream_flags_come_first_in_upstreams_order() -> None:
    names = list(FLAGS)
    assert names[: len(UPSTREAM_DEFAULTS)] == list(UPSTREAM_DEFAULTS)
    assert set(names[len(UPSTREAM_DEFAULTS) :]) == TENSORGATE_FLAGS


def test_every_spec_is_well_formed() -> None:
    kinds, statuses = set(typing.get_args(Kind)), set(typing.get_args(Status))
    for name, spec in FLAGS.items():
        assert spec.name == name
        assert spec.kind in kinds and spec.status in statuses, name
        if spec.status in ("no_effect", "unsupported"):
            assert spec.note, f"--{name} must say what TF Serving does with it"
    assert all(FLAGS[name].status == "implemented" for name in TENSORGATE_FLAGS)


def test_implemented_flags_have_the_kind_of_their_setting() -> None:
    python_types = {"int32": int, "int64": int, "float": float, "bool": bool, "string": str}
    defaults = Settings(model_base_path="/m")
    for settings_field in dataclasses.fields(Settings):
        kind = FLAGS[settings_field.name].kind
        assert type(getattr(defaults, settings_field.name)) is python_types[kind], kind
