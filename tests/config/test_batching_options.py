"""BatchingOptions: TF Serving's defaults, validation messages, and parsing from files."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.batching_options import BatchingOptions, load_options, per_model_options
from gateway.config.model_config import ConfigError


def test_tf_serving_defaults() -> None:
    options = BatchingOptions()
    assert (options.max_batch_size, options.batch_timeout_micros, options.max_enqueued_batches) == (
        1000,
        0,
        10,
    )
    assert options.threads(workers=3) == 3
    assert options.execution_batch_size == 1000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_batch_size": 0}, "max_batch_size must be >= 1, got 0"),
        ({"allowed_batch_sizes": (4, 2, 8), "max_batch_size": 8}, "monotonically increasing"),
        ({"allowed_batch_sizes": (2, 4), "max_batch_size": 8}, "must equal max_batch_size"),
        (
            {
                "allowed_batch_sizes": (2, 8),
                "max_batch_size": 32,
                "enable_large_batch_splitting": True,
                "max_execution_batch_size": 4,
            },
            "must equal max_execution_batch_size",
        ),
    ],
)
def test_invalid_options(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BatchingOptions(**kwargs)  # type: ignore[arg-type]


def test_load_from_text_format(tmp_path: Path) -> None:
    path = tmp_path / "batching.config"
    path.write_text(
        "max_batch_size { value: 16 }\n"
        "batch_timeout_micros { value: 500 }\n"
        "allowed_batch_sizes: 4\nallowed_batch_sizes: 8\nallowed_batch_sizes: 16\n"
        "pad_variable_length_inputs: true\n"
    )
    options = load_options(str(path))
    assert options.max_batch_size == 16 and options.batch_timeout_micros == 500
    assert options.allowed_batch_sizes == (4, 8, 16) and options.pad_variable_length_inputs


def test_bad_file_names_the_file_and_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "batching.config"
    path.write_text("max_batch_size { value: 8 }\nallowed_batch_sizes: 4\n")
    with pytest.raises(ConfigError) as info:
        load_options(str(path))
    assert str(path) in str(info.value) and "must equal max_batch_size" in str(info.value)


def test_per_model_file_wins_when_present(tmp_path: Path) -> None:
    default = BatchingOptions(max_batch_size=7)
    assert per_model_options(str(tmp_path), default) is default
    (tmp_path / "batching_params.pbtxt").write_text("max_batch_size { value: 3 }\n")
    assert per_model_options(str(tmp_path), default).max_batch_size == 3
