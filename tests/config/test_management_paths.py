"""Where a management call may point base paths and log prefixes: under a listed directory
(symlinks and ``..`` resolved), or as already in force; object-store URLs are the store's
business; a refusal names the flag, never the path; and a reload's config is checked before
anything looks at a path (no probe file outside)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway._pb.tensorflow_serving.apis import model_management_pb2
from gateway.config.management_paths import ManagementPaths
from gateway.config.model_config import ModelSpecConfig
from gateway.config.request_logging import RequestLogging
from gateway.config.settings import Settings
from gateway.config.validation import SettingsError
from gateway.errors import InvalidArgument
from gateway.tfserving.codec.service_messages import reload_specs


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    models, logs, foreign = tmp_path / "models", tmp_path / "logs", tmp_path / "foreign"
    for directory in (models, logs, foreign):
        directory.mkdir()
    (logs / "link").symlink_to(foreign)
    (models / "link").symlink_to(foreign)
    return models, logs, foreign


def test_paths_under_the_listed_directories_are_allowed(dirs: tuple[Path, Path, Path]) -> None:
    models, logs, _ = dirs
    paths = ManagementPaths.from_flags(f" {models} ,", str(logs))
    assert paths.check_base_path(str(models / "m")) is None
    assert paths.check_base_path(str(models)) is None
    assert paths.check_base_path("s3://bucket/m") is None  # the store's credentials govern it
    assert paths.check_log_prefix(str(logs / "m")) is None
    assert paths.check_log_prefix(str(logs / "sub" / "m")) is None  # refused later if missing


def test_paths_outside_are_refused_naming_the_flag_never_the_path(
    dirs: tuple[Path, Path, Path],
) -> None:
    models, logs, foreign = dirs
    paths = ManagementPaths.from_flags(str(models), str(logs))
    for base in (foreign / "m", models / "link" / "m", models / ".." / "foreign", "/proc"):
        problem = paths.check_base_path(str(base))
        assert problem == "base_path is outside the directories --management_base_path_dirs lists"
    sibling = f"{models}-evil/m"  # a name that only starts like the listed directory
    assert paths.check_base_path(sibling) is not None
    for prefix in (foreign / "m", logs / "link" / "m", logs / ".." / "foreign" / "m"):
        problem = paths.check_log_prefix(str(prefix))
        assert problem == "filename_prefix is outside the directories --management_log_dirs lists"


def test_without_listed_directories_only_the_paths_in_force_may_stay(tmp_path: Path) -> None:
    in_force = ModelSpecConfig("m", "/models/m", logging=RequestLogging("file", "/var/log/m", 1.0))
    paths = ManagementPaths().keeping([in_force])
    assert paths.check_base_path("/models/m") is None
    assert paths.check_log_prefix("/var/log/m") is None
    problem = paths.check_base_path("/models/other")
    assert problem is not None and problem.endswith(
        "--management_base_path_dirs lists, and it lists none"
    )
    assert paths.check_log_prefix("/var/log/other") is not None


def _reload(base: Path, prefix: Path) -> model_management_pb2.ReloadConfigRequest:
    request = model_management_pb2.ReloadConfigRequest()
    model = request.config.model_config_list.config.add(name="m", base_path=str(base))
    collector = model.logging_config.log_collector_config
    collector.type, collector.filename_prefix = "file", str(prefix)
    model.logging_config.sampling_config.sampling_rate = 1.0
    return request


def test_a_reload_is_checked_before_anything_looks_at_a_path(
    dirs: tuple[Path, Path, Path],
) -> None:
    """The prefix's directory would take a probe file: a management call's is refused first,
    and nothing is created there; the operator's own config (no rules) is probed as before."""
    models, logs, foreign = dirs
    paths = ManagementPaths.from_flags(str(models), str(logs))
    with pytest.raises(InvalidArgument, match="--management_log_dirs") as info:
        reload_specs(_reload(models / "m", foreign / "m"), paths)
    assert str(foreign) not in info.value.message
    with pytest.raises(InvalidArgument, match="--management_base_path_dirs"):
        reload_specs(_reload(foreign / "m", logs / "m"), paths)
    assert list(foreign.iterdir()) == []
    (spec,) = reload_specs(_reload(models / "m", logs / "m"), paths)
    assert spec.logging is not None and spec.logging.filename_prefix == str(logs / "m")
    (spec,) = reload_specs(_reload(foreign / "m", foreign / "m"))  # the operator's: no rules
    assert spec.base_path == str(foreign / "m")


def test_the_flags_list_absolute_directories() -> None:
    with pytest.raises(SettingsError, match="management_log_dirs lists 'logs'"):
        Settings(model_base_path="/m", management_log_dirs="/var/log, logs")
    Settings(model_base_path="/m", management_base_path_dirs="/models,/more,")
