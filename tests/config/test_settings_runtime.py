"""The settings of the running processes: workers and threads derived automatically, a bounded
drain, bounded request memory, text logs."""

from __future__ import annotations

import dataclasses

from gateway.config.settings_field import MIB
from gateway.config.settings_runtime import RuntimeSettings


def test_workers_and_threads_are_derived_unless_given() -> None:
    runtime = RuntimeSettings()
    assert runtime.workers == 0
    assert (
        runtime.tensorflow_session_parallelism,
        runtime.tensorflow_intra_op_parallelism,
        runtime.tensorflow_inter_op_parallelism,
    ) == (0, 0, 0)
    assert runtime.worker_arena_mb == 64
    assert (runtime.worker_ping_interval_seconds, runtime.worker_ping_timeout_seconds) == (
        5.0,
        30.0,
    )


def test_the_drain_is_bounded_and_no_ready_fd_is_written() -> None:
    runtime = RuntimeSettings()
    assert runtime.shutdown_grace_seconds == 10.0
    assert runtime.ready_fd == -1


def test_request_memory_is_bounded_by_default() -> None:
    runtime = RuntimeSettings()
    assert runtime.max_tensor_elements == 2**24
    assert runtime.max_request_bytes == 64 * MIB
    assert runtime.max_inflight_bytes == 8 * runtime.max_request_bytes
    assert not runtime.enable_serialization_as_tensor_content  # typed fields, as TF Serving


def test_text_logs_and_no_metrics_page_by_default() -> None:
    runtime = RuntimeSettings()
    assert (runtime.log_format, runtime.monitoring_config_file) == ("text", "")


def test_every_field_is_documented() -> None:
    for settings_field in dataclasses.fields(RuntimeSettings):
        assert len(settings_field.metadata["doc"]) > 30, settings_field.name
