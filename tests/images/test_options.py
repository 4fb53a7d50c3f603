"""A model's ``image_options.json``: what it may say, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.config.model_config import ConfigError
from gateway.errors import FailedPrecondition
from gateway.images.options import OPTIONS_FILE, ImageOptions, check_version, read_options


def write(folder: Path, document: Any) -> Path:
    (folder / OPTIONS_FILE).write_text(json.dumps(document))
    return folder


def test_no_file_means_plain_rgb_values() -> None:
    assert read_options("/nonexistent/1") == ImageOptions()
    assert not ImageOptions().scales


def test_the_documented_example_reads_as_written(tmp_path: Path) -> None:
    document = {
        "channel_order": "BGR",
        "range": [0, 1],
        "mean": [0.406, 0.456, 0.485],
        "std": [0.225, 0.224, 0.229],
    }
    options = read_options(str(write(tmp_path, document)))
    assert options == ImageOptions("BGR", (0.0, 1.0), (0.406, 0.456, 0.485), (0.225, 0.224, 0.229))
    assert options.scales
    assert read_options(str(write(tmp_path, {"mean": 127.5, "std": 127.5}))).mean == (127.5,)


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ([1], "expected a JSON object"),
        ({"order": "BGR"}, "unknown key"),
        ({"channel_order": "BRG"}, "channel_order must be RGB or BGR"),
        ({"range": [0, 1, 2]}, r"range must be \[low, high\]"),
        ({"range": [1, 1]}, "low != high"),
        ({"mean": ["0.5"]}, "mean must be a number or a list of numbers"),
        ({"std": [1, 0, 1]}, "std must not be 0"),
        ({"std": True}, "std must be a number"),
    ],
)
def test_a_bad_file_is_refused_naming_the_key(tmp_path: Path, document: Any, words: str) -> None:
    folder = str(write(tmp_path, document))
    with pytest.raises(ConfigError, match=words):
        read_options(folder)
    with pytest.raises(FailedPrecondition, match=words):
        check_version("m", 1, folder)


def test_a_file_that_is_not_json_fails_the_versions_load(tmp_path: Path) -> None:
    (tmp_path / OPTIONS_FILE).write_text("{channel_order: BGR}")
    with pytest.raises(FailedPrecondition, match="not JSON"):
        check_version("m", 1, str(tmp_path))


def test_options_must_fit_the_input() -> None:
    scaled = ImageOptions(value_range=(0.0, 1.0))
    scaled.check(3, True, "f")
    with pytest.raises(ConfigError, match="need a floating-point input"):
        scaled.check(3, False, "f")
    with pytest.raises(ConfigError, match="mean has 3 values for an input of 1 channels"):
        ImageOptions(mean=(1.0, 2.0, 3.0)).check(1, True, "f")
