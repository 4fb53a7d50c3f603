"""A model's ``logging_config``: accepted as plain data when the collector, the rate and the
prefix are usable; a clear error naming the model and the problem at load (and so at reload,
which loads the same way) otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway._pb.tensorflow_serving.apis import model_management_pb2
from gateway.config.model_config import ConfigError, load_model_server_config, model_specs
from gateway.config.request_logging import RequestLogging
from gateway.errors import InvalidArgument
from gateway.ipc.snapshot import spec_from_wire, spec_to_wire
from gateway.tfserving.codec.service_messages import reload_specs


def _config(tmp_path: Path, logging: str) -> Path:
    path = tmp_path / "models.config"
    model = f'name: "m" base_path: "/m" logging_config {{ {logging} }}'
    path.write_text(f"model_config_list {{ config {{ {model} }} }}")
    return path


def _file(prefix: Path | str, rate: float) -> str:
    return (
        f'log_collector_config {{ type: "file" filename_prefix: "{prefix}" }} '
        f"sampling_config {{ sampling_rate: {rate} attributes: 3 }}"
    )


def test_a_usable_config_becomes_plain_data_and_leaves_no_probe_behind(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (spec,) = model_specs(load_model_server_config(_config(tmp_path, _file(logs / "m", 0.5))))
    assert spec.logging == RequestLogging("file", str(logs / "m"), 0.5, 3)
    assert os.listdir(logs) == []
    assert spec_from_wire(spec_to_wire(spec)) == spec  # as front ends get it


@pytest.mark.parametrize("rate", [0.0, 1.0])
def test_the_rate_bounds_are_accepted(tmp_path: Path, rate: float) -> None:
    (spec,) = model_specs(load_model_server_config(_config(tmp_path, _file(tmp_path / "m", rate))))
    assert spec.logging is not None and spec.logging.sampling_rate == rate


@pytest.mark.parametrize(
    ("logging", "problem"),
    [
        (
            'log_collector_config { type: "kafka" filename_prefix: "/tmp/m" }',
            "model m: logging_config: log collector type 'kafka' is unknown; tensorgate has: file",
        ),
        (
            _file("{dir}/m", 1.5),
            "model m: logging_config: sampling_rate must be in [0, 1], got 1.5",
        ),
        (_file("{dir}/m", -0.1), "sampling_rate must be in [0, 1], got -0.1"),
        (_file("{dir}/m", float("nan")), "sampling_rate must be in [0, 1], got nan"),
        (
            'log_collector_config { type: "file" }',
            "model m: logging_config: filename_prefix is empty",
        ),
        (_file("relative/m", 0.5), "filename_prefix relative/m is not an absolute path"),
        (_file("{dir}/missing/m", 0.5), "directory {dir}/missing does not exist"),
        (_file("{dir}/a_file/m", 0.5), "directory {dir}/a_file does not exist"),
        (
            'log_collector_config { type: "file" filename_prefix: "{dir}/m" } '
            'sampling_config { sampling_rate: 0.5 per_task_sampling_configs { dc: "x" } }',
            "per_task_sampling_configs is not supported",
        ),
    ],
)
def test_a_bad_config_is_a_clear_error_at_load(tmp_path: Path, logging: str, problem: str) -> None:
    (tmp_path / "a_file").write_text("")
    path = _config(tmp_path, logging.replace("{dir}", str(tmp_path)))
    with pytest.raises(ConfigError) as info:
        load_model_server_config(path)
    assert problem.replace("{dir}", str(tmp_path)) in str(info.value)


def test_a_directory_that_takes_no_file_is_refused(tmp_path: Path) -> None:
    """/proc/self is a directory where no file can be created, even by root."""
    path = _config(tmp_path, _file("/proc/self/m", 0.5))
    with pytest.raises(ConfigError, match="filename_prefix /proc/self/m: cannot create a file in"):
        load_model_server_config(path)


def test_a_bad_config_is_refused_at_reload_with_invalid_argument(tmp_path: Path) -> None:
    """HandleReloadConfigRequest checks the same way: the running config stays."""
    request = model_management_pb2.ReloadConfigRequest()
    model = request.config.model_config_list.config.add(name="m", base_path="/m")
    model.logging_config.log_collector_config.type = "file"
    model.logging_config.log_collector_config.filename_prefix = str(tmp_path / "m")
    model.logging_config.sampling_config.sampling_rate = 2.0
    with pytest.raises(InvalidArgument, match=r"model m: logging_config: sampling_rate must be in"):
        reload_specs(request)
    model.logging_config.sampling_config.sampling_rate = 0.25
    (spec,) = reload_specs(request)
    assert spec.logging == RequestLogging("file", str(tmp_path / "m"), 0.25)
