"""The settings of what is served: TF Serving's defaults for models, their lifecycle and
batching; the management API off."""

from __future__ import annotations

import dataclasses

from gateway.config.settings_models import ModelSettings


def test_one_model_named_default_polled_every_second() -> None:
    models = ModelSettings()
    assert (models.model_name, models.model_base_path, models.model_config_file) == (
        "default",
        "",
        "",
    )
    assert models.file_system_poll_wait_seconds == 1
    assert models.model_config_file_poll_wait_seconds == 0  # the config file is read once
    assert models.model_workers == ""  # every model on every worker


def test_loads_are_retried_and_warmed_up_as_tf_serving_does() -> None:
    models = ModelSettings()
    assert (models.max_num_load_retries, models.load_retry_interval_micros) == (5, 60_000_000)
    assert models.saved_model_tags == "serve"
    assert models.enable_model_warmup and models.num_request_iterations_for_warmup == 0
    assert not models.enable_signature_method_name_check
    assert not models.allow_version_labels_for_unavailable_models


def test_management_and_batching_are_off_until_asked_for() -> None:
    models = ModelSettings()
    assert not models.enable_model_management_api
    assert not models.enable_batching and not models.enable_per_model_batching_parameters
    assert models.batching_parameters_file == ""
    assert models.max_queue_delay_ms == 0  # only a request's deadline limits its wait


def test_every_field_is_documented() -> None:
    for settings_field in dataclasses.fields(ModelSettings):
        assert len(settings_field.metadata["doc"]) > 30, settings_field.name
