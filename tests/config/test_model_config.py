"""Config files → validated protos and ModelSpecConfig: parsing, TF Serving's rules, messages."""

from __future__ import annotations

import pickle
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.config.model_config import (
    ConfigError,
    ModelSpecConfig,
    load_batching_parameters,
    load_model_server_config,
    load_monitoring_config,
    load_ssl_config,
    model_server_config_from_flags,
    model_specs,
)
from gateway.config.settings import Settings

MSC = "tensorflow.serving.ModelServerConfig"


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as path:
        yield Path(path)


def write(directory: Path, text: str, name: str = "models.config") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def specs_of(directory: Path, text: str) -> list[ModelSpecConfig]:
    return model_specs(load_model_server_config(write(directory, text)))


def test_full_config_becomes_plain_specs(workdir: Path) -> None:
    specs = specs_of(
        workdir,
        """
        model_config_list {
          config {
            name: "mlp"
            base_path: "/models/mlp"
            model_platform: "onnx"
            model_version_policy { all {} }
            version_labels { key: "stable" value: 1 }
            version_labels { key: "canary" value: 2 }
          }
          config { name: "plain" base_path: "/models/plain" }
          config {
            name: "three"
            base_path: "/models/three/"
            model_platform: "tensorflow"
            model_version_policy { latest { num_versions: 3 } }
          }
          config {
            name: "pinned"
            base_path: "/models/pinned"
            model_version_policy { specific { versions: 7 versions: 3 versions: 7 } }
            version_labels { key: "old" value: 3 }
          }
          config { name: "legacy" base_path: "/models/legacy" model_type: TENSORFLOW }
          config { name: "zero" base_path: "/z" model_version_policy { latest {} } }
        }
        """,
    )
    assert specs == [
        ModelSpecConfig("mlp", "/models/mlp", "onnx", "all", 0, (), {"canary": 2, "stable": 1}),
        ModelSpecConfig("plain", "/models/plain", "", "latest", 1, (), {}),
        ModelSpecConfig("three", "/models/three/", "tensorflow", "latest", 3, (), {}),
        ModelSpecConfig("pinned", "/models/pinned", "", "specific", 0, (3, 7), {"old": 3}),
        ModelSpecConfig("legacy", "/models/legacy", "tensorflow", "latest", 1, (), {}),
        ModelSpecConfig("zero", "/z", "", "latest", 1, (), {}),
    ]


def test_empty_config_serves_nothing(workdir: Path) -> None:
    assert specs_of(workdir, "") == []
    assert specs_of(workdir, "# only a comment\nmodel_config_list {}\n") == []


def test_select_versions_applies_the_policy() -> None:
    on_disk = [3, 1, 10, 2]
    assert ModelSpecConfig("m", "/m").select_versions(on_disk) == (10,)
    assert ModelSpecConfig("m", "/m", num_versions=2).select_versions(on_disk) == (3, 10)
    assert ModelSpecConfig("m", "/m", policy="all", num_versions=0).select_versions(on_disk) == (
        1,
        2,
        3,
        10,
    )
    pinned = ModelSpecConfig("m", "/m", policy="specific", num_versions=0, versions=(2, 4, 10))
    assert pinned.select_versions(on_disk) == (2, 10)
    assert ModelSpecConfig("m", "/m").select_versions([]) == ()


def test_specs_pickle_and_hash() -> None:
    spec = ModelSpecConfig("m", "/m", labels={"a": 1})
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert hash(spec) == hash(ModelSpecConfig("m", "/m", labels={"b": 2}))


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        (
            'model_config_list {\n  config {\n    nam: "x"\n  }\n}\n',
            '3:5 : Message type "tensorflow.serving.ModelConfig" has no field named "nam".',
        ),
        ("model_config_list { config { name: 3 } }", "Expected string but found: '3'"),
        ('model_config_list { config { name: "a" ', 'Expected "}".'),
        (
            "model_config_list { config { model_version_policy { latest { num_versions: -1 } } } }",
            "Value out of range: -1",
        ),
        ("model_config_list {}\nmodel_config_list {}", 'multiple "model_config_list" fields'),
        ('model_config_list { config { model_type: PYTORCH base_path: "/m" } }', "PYTORCH"),
    ],
)
def test_malformed_file_names_file_type_and_position(workdir: Path, text: str, detail: str) -> None:
    path = write(workdir, text)
    with pytest.raises(ConfigError) as info:
        load_model_server_config(path)
    message = str(info.value)
    assert message.startswith(f"Error parsing text-format {MSC} in {path}: ")
    assert detail in message


def test_unreadable_files(workdir: Path) -> None:
    missing = workdir / "absent.config"
    with pytest.raises(ConfigError) as info:
        load_model_server_config(missing)
    assert str(info.value) == f"Could not read {MSC} file {missing}: No such file or directory"
    with pytest.raises(ConfigError, match="Is a directory"):
        load_model_server_config(workdir)
    binary = workdir / "binary.config"
    binary.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(ConfigError, match=rf"^Error parsing text-format {MSC} in .*utf-8"):
        load_model_server_config(binary)


@pytest.mark.parametrize(
    ("models", "problem"),
    [
        (
            'config { name: "a" base_path: "/a" } config { name: "a" base_path: "/b" }',
            "Illegal to list model a multiple times in config list",
        ),
        ('config { base_path: "/a" }', "model #1 in model_config_list has an empty name"),
        ('config { name: "a" }', "model a has an empty base_path"),
        (
            'config { name: "a" base_path: "models/a" }',
            "Expected model a to have an absolute path or URI; got base_path()=models/a",
        ),
        (
            'config { name: "a" base_path: "hdfs://b/a" }',
            "model a: base_path hdfs://b/a is not an object URL tensorgate reads (s3://, gs://, az://)",
        ),
        ('config { name: "a" base_path: "s3://b/../a" }', "has an empty, '.' or '..' segment"),
        ('config { name: "a" base_path: "gs:///a" }', "model a: base_path gs:///a names no bucket"),
        (
            'config { name: "a" base_path: "/a" model_platform: "pytorch" }',
            'model a has model_platform \'pytorch\'; tensorgate serves "onnx", "tensorflow"',
        ),
        (
            'config { name: "a" base_path: "/a" model_type: TENSORFLOW model_platform: "onnx" }',
            "Illegal setting both ModelServerConfig::model_type (deprecated) and",
        ),
        (
            'config { name: "a" base_path: "/a" model_type: OTHER }',
            "ModelServerConfig::model_type choice OTHER not supported",
        ),
        (
            'config { name: "a" base_path: "/a" model_version_policy { specific {} } }',
            "model a: model_version_policy.specific.versions is empty",
        ),
        (
            'config { name: "a" base_path: "/a" '
            "model_version_policy { specific { versions: -2 versions: 1 } } }",
            "model a: version -2 is negative",
        ),
        (
            'config { name: "a" base_path: "/a" version_labels { key: "" value: 1 } }',
            "model a: version_labels has an empty label",
        ),
        (
            'config { name: "a" base_path: "/a" version_labels { key: "x" value: -1 } }',
            "model a: version label x -> -1 is negative",
        ),
        (
            'config { name: "a" base_path: "/a" logging_config {} }',
            "model a: logging_config: log collector type '' is unknown; tensorgate has: file",
        ),
    ],
)
def test_rule_violations_name_file_and_problem(workdir: Path, models: str, problem: str) -> None:
    path = write(workdir, f"model_config_list {{ {models} }}")
    with pytest.raises(ConfigError) as info:
        load_model_server_config(path)
    assert str(info.value).startswith(f"Invalid {MSC} in {path}: ")
    assert problem in str(info.value)


def test_custom_model_config_is_refused(workdir: Path) -> None:
    path = write(workdir, 'custom_model_config { type_url: "type.example/x" }')
    with pytest.raises(ConfigError, match="custom_model_config is not supported by tensorgate"):
        load_model_server_config(path)


def test_model_specs_validates_an_in_memory_config(workdir: Path) -> None:
    config = load_model_server_config(
        write(workdir, 'model_config_list { config { name: "a" base_path: "/a" } }')
    )
    config.model_config_list.config.add(name="a", base_path="/b")
    with pytest.raises(ConfigError, match=rf"^Invalid {MSC}: Illegal to list model a multiple"):
        model_specs(config)


def test_single_model_from_flags() -> None:
    config = model_server_config_from_flags(Settings(model_name="mlp", model_base_path="/m/mlp"))
    assert model_specs(config) == [ModelSpecConfig("mlp", "/m/mlp", "", "latest", 1, (), {})]
    default = model_server_config_from_flags(Settings(model_base_path="/m/x"))
    assert model_specs(default)[0].name == "default"
    with pytest.raises(ConfigError, match=re.escape("got base_path()=rel/m")):
        model_server_config_from_flags(Settings(model_base_path="rel/m"))


def test_config_file_from_flags_wins_over_single_model(workdir: Path) -> None:
    path = write(workdir, 'model_config_list { config { name: "a" base_path: "/a" } }')
    settings = Settings(model_config_file=str(path), model_name="ignored", model_base_path="/x")
    assert [s.name for s in model_specs(model_server_config_from_flags(settings))] == ["a"]


def test_batching_parameters(workdir: Path) -> None:
    params = load_batching_parameters(
        write(
            workdir,
            "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 1000 }\n"
            "allowed_batch_sizes: 8\nallowed_batch_sizes: 32\npad_variable_length_inputs: true\n",
            "batching.pbtxt",
        )
    )
    assert params.max_batch_size.value == 32
    assert params.batch_timeout_micros.value == 1000
    assert list(params.allowed_batch_sizes) == [8, 32]
    assert not params.HasField("num_batch_threads")
    bad = write(workdir, "max_batch_size: 32", "bad.pbtxt")
    with pytest.raises(ConfigError, match=r"^Error parsing text-format tensorflow\.serving\.Batc"):
        load_batching_parameters(bad)


def test_monitoring_config(workdir: Path) -> None:
    config = load_monitoring_config(
        write(workdir, 'prometheus_config { enable: true path: "/metrics" }', "m.config")
    )
    assert (config.prometheus_config.enable, config.prometheus_config.path) == (True, "/metrics")
    with pytest.raises(ConfigError, match=r"tensorflow\.serving\.MonitoringConfig in .*enabel"):
        load_monitoring_config(write(workdir, "prometheus_config { enabel: true }", "b.config"))


def test_ssl_config(workdir: Path) -> None:
    config = load_ssl_config(
        write(workdir, 'server_key: "KEY"\nserver_cert: "CERT"\nclient_verify: true\n', "ssl")
    )
    assert (config.server_key, config.server_cert, config.custom_ca) == ("KEY", "CERT", "")
    assert config.client_verify is True
    with pytest.raises(ConfigError, match=r"^Could not read tensorflow\.serving\.SSLConfig file"):
        load_ssl_config(workdir / "nope")
