"""The settings object: one frozen, validated dataclass of every implemented flag, in three
documented groups, with its derived values."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.config.flag_table import FLAGS
from gateway.config.flags import parse_flags
from gateway.config.machine import available_cpus
from gateway.config.settings import Settings
from gateway.config.settings_field import MIB
from gateway.config.settings_listen import ListenSettings
from gateway.config.settings_models import ModelSettings
from gateway.config.settings_runtime import RuntimeSettings
from gateway.config.validation import SettingsError

BASE = ["--model_base_path=/models/m"]


def test_settings_fields_are_exactly_the_implemented_flags_and_documented() -> None:
    implemented = {name for name, spec in FLAGS.items() if spec.status == "implemented"}
    fields = dataclasses.fields(Settings)
    assert {f.name for f in fields} == implemented
    for f in fields:
        assert len(f.metadata["doc"]) > 30, f.name


def test_settings_are_frozen() -> None:
    settings = parse_flags(BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.port = 1  # type: ignore[misc]


def test_the_fields_are_the_three_groups_in_order() -> None:
    groups = (ListenSettings, ModelSettings, RuntimeSettings)
    names = [f.name for group in groups for f in dataclasses.fields(group)]
    assert [f.name for f in dataclasses.fields(Settings)] == names
    assert len(set(names)) == len(names)


def test_validation_runs_on_construction() -> None:
    with pytest.raises(SettingsError, match=r"^port must be in 0\.\.65535, got 70000$"):
        Settings(model_base_path="/m", port=70000)
    with pytest.raises(SettingsError, match="either model_base_path or model_config_file"):
        Settings()


def test_equal_settings_are_equal_and_hashable() -> None:
    one, two = Settings(model_base_path="/m"), Settings(model_base_path="/m")
    assert one == two and hash(one) == hash(two)
    assert one != Settings(model_base_path="/m", port=1)


def test_the_grpc_thread_default_is_computed_from_the_cpus() -> None:
    assert Settings(model_base_path="/m").grpc_max_threads == 4 * available_cpus()


def test_derived_values() -> None:
    settings = Settings(
        model_base_path="/m",
        grpc_channel_arguments="grpc.max_connection_age_ms=2000,grpc.primary_user_agent=tg",
        model_workers="resnet=1, *=2",
        saved_model_tags="serve, gpu",
        worker_arena_mb=3,
    )
    assert settings.grpc_channel_options == (
        ("grpc.max_connection_age_ms", 2000),
        ("grpc.primary_user_agent", "tg"),
    )
    assert settings.model_worker_counts == {"resnet": 1, "*": 2}
    assert settings.saved_model_tag_set == frozenset({"serve", "gpu"})
    assert settings.worker_arena_bytes == 3 * MIB == 3 * 1024 * 1024
