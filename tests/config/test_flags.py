"""Command line → Settings: flag syntax, defaults, refusals (the validation rules reported as
FlagError), warnings, --help and --version."""

from __future__ import annotations

import io
import logging

import pytest

from gateway.config.flag_table import FLAGS
from gateway.config.flags import (
    FlagError,
    parse_flags,
    usage,
    version_text,
)
from gateway.config.machine import available_cpus
from gateway.config.settings import Settings
from gateway.config.validation import SettingsError

BASE = ["--model_base_path=/models/m"]


def test_defaults_from_an_empty_command_line() -> None:
    settings = parse_flags(BASE)
    assert settings == Settings(model_base_path="/models/m")
    assert settings.port == 8500
    assert settings.rest_api_port == 0
    assert settings.rest_api_timeout_in_ms == 30000
    assert settings.model_name == "default"
    assert settings.file_system_poll_wait_seconds == 1
    assert settings.saved_model_tag_set == frozenset({"serve"})
    assert settings.enable_model_warmup is True
    assert settings.enable_batching is False
    assert settings.max_message_bytes == 64 * 1024 * 1024
    assert settings.worker_arena_bytes == 64 * 1024 * 1024
    assert settings.max_tensor_elements == 2**24
    assert settings.worker_ping_timeout_seconds == 30.0
    assert settings.worker_ping_interval_seconds == 5.0
    assert settings.grpc_max_threads == 4 * available_cpus()


@pytest.mark.parametrize(
    "argv",
    [
        ["--port=9000", "--rest_api_port=9001"],
        ["--port", "9000", "--rest_api_port", "9001"],
        ["--port=1", "--port=9000", "--rest_api_port= 9001"],
        ["--port=+9000", "--rest_api_port=9001"],
    ],
)
def test_value_syntaxes(argv: list[str]) -> None:
    settings = parse_flags([*BASE, *argv])
    assert (settings.port, settings.rest_api_port) == (9000, 9001)


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("--enable_batching", True),
        ("--enable_batching=true", True),
        ("--enable_batching=TRUE", True),
        ("--enable_batching=1", True),
        ("--enable_batching=false", False),
        ("--enable_batching=False", False),
        ("--enable_batching=0", False),
    ],
)
def test_bool_syntaxes(arg: str, expected: bool) -> None:
    assert parse_flags([*BASE, arg]).enable_batching is expected


def test_string_values_keep_equals_signs_and_may_be_empty() -> None:
    settings = parse_flags([*BASE, "--grpc_channel_arguments=a=b=c", "--model_name=m"])
    assert settings.grpc_channel_arguments == "a=b=c"
    assert settings.grpc_channel_options == (("a", "b=c"),)
    assert parse_flags([*BASE, "--grpc_socket_path="]).grpc_socket_path == ""


def test_floats_and_negative_values_in_separate_form() -> None:
    settings = parse_flags([*BASE, "--worker_ping_timeout_seconds", "2.5"])
    assert settings.worker_ping_timeout_seconds == 2.5
    with pytest.raises(FlagError, match=r"^workers must be >= 0, got -1$"):
        parse_flags([*BASE, "--workers", "-1"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--enable_batching=yes"], r"--enable_batching expects true, false, 1 or 0, got 'yes'"),
        (["--port=abc"], r"--port expects an int32 integer, got 'abc'"),
        (["--port=80.5"], r"--port expects an int32 integer, got '80.5'"),
        (["--port=99999999999"], r"--port expects an int32 integer, got '99999999999'"),
        (["--port=8500 "], r"--port expects an int32 integer"),
        (["--worker_ping_timeout_seconds=soon"], r"expects a number, got 'soon'"),
        (["--port"], r"--port needs a value: --port=VALUE"),
        (["--model_name", "--port=1"], r"--model_name needs a value"),
        (["--prot=1"], r"unknown flag --prot \(did you mean --port\?\)"),
        (["--zzzzzzzz"], r"^unknown flag --zzzzzzzz; --help lists the flags$"),
        (["model"], r"unexpected argument 'model'"),
        (["-port=1"], r"unexpected argument '-port=1'"),
        (["--", "--port=1"], r"unexpected argument '--'"),
        (["--enable_batching", "false"], r"unexpected argument 'false'"),
    ],
)
def test_malformed_command_lines(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError, match=message):
        parse_flags([*BASE, *argv])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port=70000"], r"^port must be in 0\.\.65535, got 70000$"),
        (["--rest_api_port=-2"], r"^rest_api_port must be in -1\.\.65535, got -2$"),
        (["--max_message_bytes=2147483648"], r"max_message_bytes must be in 1\.\.2147483647"),
        (["--worker_ping_timeout_seconds=nan"], r"must be a finite number, got nan"),
        (["--worker_ping_interval_seconds=0"], r"worker_ping_interval_seconds must be > 0, got 0"),
        (["--worker_arena_mb=0"], r"worker_arena_mb must be >= 1, got 0"),
        (["--max_tensor_elements=0"], r"max_tensor_elements must be >= 1, got 0"),
        (["--file_system_poll_wait_seconds=-1"], r"file_system_poll_wait_seconds must be >= 0"),
        (["--rest_api_timeout_in_ms=0"], r"rest_api_timeout_in_ms must be in 1\.\."),
        (["--model_name="], r"model_name must not be empty"),
        (["--saved_model_tags=serve,"], r"saved_model_tags must be comma-separated"),
        (["--grpc_channel_arguments=novalue"], r"key=value pairs, got 'novalue'"),
        (["--rest_api_port=8500"], r"rest_api_port must differ from port, both are 8500"),
        (["--ready_fd=-2"], r"ready_fd must be >= -1, got -2"),
        (["--shutdown_grace_seconds=-1"], r"shutdown_grace_seconds must be >= 0, got -1"),
        (["--batching_parameters_file=/b"], r"batching_parameters_file is set without enable_"),
        (["--max_request_bytes=0"], r"max_request_bytes must be >= 1, got 0"),
        (["--max_inflight_bytes=0"], r"max_inflight_bytes must be >= 1, got 0"),
        (["--grpc_bind_address=localhost"], r"grpc_bind_address must be an IP address"),
        (["--rest_api_bind_address=1.2.3"], r"rest_api_bind_address must be an IP address"),
        (["--rest_api_enable_tls"], r"rest_api_enable_tls needs ssl_config_file"),
        (["--max_concurrent_requests=-1"], r"max_concurrent_requests must be >= 0, got -1"),
        (["--rest_api_max_connections=0"], r"rest_api_max_connections must be in 1\.\."),
        (["--rest_api_header_timeout_seconds=0"], r"rest_api_header_timeout_seconds must be > 0"),
        (
            [
                "--tensorflow_session_parallelism=2",
                "--tensorflow_intra_op_parallelism=2",
                "--tensorflow_inter_op_parallelism=2",
            ],
            r"not all three",
        ),
    ],
)
def test_invalid_values_are_refused_with_the_rule(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError, match=message):
        parse_flags([*BASE, *argv])


def test_a_model_source_is_required() -> None:
    with pytest.raises(FlagError, match="either model_base_path or model_config_file must be set"):
        parse_flags(["--port=9000"])
    with pytest.raises(SettingsError):
        Settings()


def test_port_zero_and_config_file_only_are_valid() -> None:
    settings = parse_flags(["--port=0", "--grpc_socket_path=/tmp/s", "--model_config_file=/c"])
    assert (settings.port, settings.grpc_socket_path) == (0, "/tmp/s")
    assert (settings.ready_fd, settings.shutdown_grace_seconds) == (-1, 10.0)


def test_model_name_and_base_path_ignored_with_config_file(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.config.flags"):
        settings = parse_flags(["--model_config_file=/c", "--model_name=x", "--model_base_path=/m"])
    assert settings.model_config_file == "/c"
    assert "--model_name and --model_base_path ignored because --model_config_file is set" in (
        caplog.text
    )


def test_per_model_batching_without_batching_is_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.config.flags"):
        parse_flags([*BASE, "--enable_per_model_batching_parameters"])
    assert "--enable_per_model_batching_parameters ignored" in caplog.text


@pytest.mark.parametrize(
    "arg",
    [
        "--xla_cpu_compilation_enabled",
        "--platform_config_file=/p.conf",
        "--per_process_gpu_memory_fraction=0.5",
        "--enable_profiler=false",
    ],
)
def test_unsupported_flags_are_refused_unless_default(arg: str) -> None:
    name = arg[2:].partition("=")[0]
    with pytest.raises(FlagError, match=rf"^--{name} is not supported yet by tensorgate \("):
        parse_flags([*BASE, arg])


@pytest.mark.parametrize(
    "arg",
    [
        "--xla_cpu_compilation_enabled=false",
        "--platform_config_file=",
        "--per_process_gpu_memory_fraction=0",
        "--enable_profiler",
        f"--num_tflite_pools={available_cpus()}",
    ],
)
def test_unsupported_flags_with_their_default_are_accepted_and_logged(
    arg: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="gateway.config.flags"):
        assert parse_flags([*BASE, arg]) == Settings(model_base_path="/models/m")
    assert "is TF Serving's default; accepted" in caplog.text


def test_no_effect_flags_take_any_value_and_say_so(caplog: pytest.LogCaptureFixture) -> None:
    argv = [
        *BASE,
        "--rest_api_num_threads=3",
        "--num_unload_threads=4",
        "--flush_filesystem_caches=0",
    ]
    with caplog.at_level(logging.INFO, logger="gateway.config.flags"):
        parse_flags([*argv, "--enable_grpc_healthcheck_service"])
    assert "--rest_api_num_threads=3 accepted; it has no effect in tensorgate" in caplog.text
    assert "--enable_grpc_healthcheck_service=true accepted" in caplog.text


def test_help_lists_every_flag_with_its_default() -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        parse_flags(["--help"], stdout=out)
    assert exit_info.value.code == 0
    text = out.getvalue()
    assert text == usage()
    for name, spec in FLAGS.items():
        assert f"\t--{name}=" in text, name
        assert f"\t{spec.kind}\t" in text
    assert '--model_name="default"' in text
    assert "--port=8500" in text
    assert "--enable_model_warmup=true" in text
    assert "[not supported yet: only the default is accepted]" in text


def test_version_prints_tf_serving_style_lines() -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        parse_flags(["--version"], stdout=out)
    assert exit_info.value.code == 0
    assert out.getvalue() == version_text()
    assert out.getvalue().startswith("TensorFlow ModelServer: tensorgate-")
    assert parse_flags([*BASE, "--version=false"]).port == 8500


def test_lifecycle_flags_are_settings() -> None:
    settings = parse_flags(
        [
            "--model_config_file=/m.config",
            "--model_config_file_poll_wait_seconds=5",
            "--max_num_load_retries=2",
            "--load_retry_interval_micros=-1",
            "--allow_version_labels_for_unavailable_models",
            "--num_request_iterations_for_warmup=3",
            "--enable_model_management_api",
            "--model_workers=resnet=1, *=2",
        ]
    )
    assert settings.model_config_file_poll_wait_seconds == 5
    assert settings.max_num_load_retries == 2
    assert settings.load_retry_interval_micros == -1  # TF Serving: negative means no wait
    assert settings.allow_version_labels_for_unavailable_models is True
    assert settings.num_request_iterations_for_warmup == 3
    assert settings.enable_model_management_api is True
    assert settings.model_worker_counts == {"resnet": 1, "*": 2}
    assert parse_flags(BASE).enable_model_management_api is False
    assert parse_flags(BASE).model_worker_counts == {}


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("--max_num_load_retries=-1", "max_num_load_retries must be >= 0, got -1"),
        ("--num_request_iterations_for_warmup=-2", "must be >= 0, got -2"),
        ("--model_workers=resnet", "model_workers items are name=N, got 'resnet'"),
        ("--model_workers=resnet=0", "N must be >= 1"),
        ("--model_workers=a=1,a=2", "names a twice"),
    ],
)
def test_lifecycle_flags_are_checked(arg: str, message: str) -> None:
    with pytest.raises(FlagError, match=message):
        parse_flags([*BASE, arg])


def test_help_says_the_management_api_is_off_by_default() -> None:
    text = usage()
    assert "--enable_model_management_api=false" in text
    assert "Off by default (the RPC answers UNIMPLEMENTED)" in text
    for name in (
        "max_num_load_retries",
        "load_retry_interval_micros",
        "allow_version_labels_for_unavailable_models",
        "num_request_iterations_for_warmup",
        "model_config_file_poll_wait_seconds",
    ):
        line = next(line for line in text.splitlines() if f"--{name}=" in line)
        assert "not supported" not in line, line


def test_num_load_threads_is_implemented() -> None:
    """It bounds concurrent loads (once accepted with no effect)."""
    assert parse_flags([*BASE, "--num_load_threads=3"]).num_load_threads == 3
    with pytest.raises(FlagError, match="num_load_threads"):
        parse_flags([*BASE, "--num_load_threads=-1"])
