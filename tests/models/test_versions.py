"""A model's versions on disk and what a worker's load reply says of one: integer folders only,
the platform configured or detected (with TF Serving's texts when files are missing), the path a
worker loads, the signatures."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import FailedPrecondition, NotFound
from gateway.models import versions

X = {"name": "x", "dtype": "float32", "shape": [-1, 4]}
Y = {"name": "y", "dtype": "float32", "shape": [-1, 2]}


def test_only_integer_named_folders_are_versions(tmp_path: Path) -> None:
    for name in ("1", "12", "007", "latest", "3.1"):
        (tmp_path / name).mkdir()
    (tmp_path / "5").write_text("a file, not a folder")
    assert versions.versions_on_disk(str(tmp_path)) == {
        1: str(tmp_path / "1"),
        12: str(tmp_path / "12"),
        7: str(tmp_path / "007"),
    }
    with pytest.raises(FileNotFoundError):
        versions.versions_on_disk(str(tmp_path / "missing"))  # not "no versions": see base_path


def test_the_platform_is_configured_or_detected_from_the_files(tmp_path: Path) -> None:
    onnx, saved, empty = tmp_path / "onnx", tmp_path / "saved", tmp_path / "empty"
    for folder in (onnx, saved, empty):
        folder.mkdir()
    (onnx / "model.onnx").write_bytes(b"onnx")
    (saved / "saved_model.pbtxt").write_text("")
    assert versions.detect_platform("", str(onnx)) == "onnx"
    assert versions.detect_platform("", str(saved)) == "tensorflow"
    assert versions.detect_platform("tensorflow", str(saved)) == "tensorflow"
    with pytest.raises(FailedPrecondition, match=r"no model\.onnx or saved_model\.pb in"):
        versions.detect_platform("", str(empty))
    with pytest.raises(
        FailedPrecondition, match=r"model_platform is onnx but .* has no model\.onnx"
    ):
        versions.detect_platform("onnx", str(saved))
    with pytest.raises(
        NotFound,
        match=r"^Could not find SavedModel \.pb or \.pbtxt at supplied export directory path",
    ):
        versions.detect_platform("tensorflow", str(onnx))


def test_a_worker_loads_the_onnx_file_or_the_savedmodel_folder() -> None:
    assert versions.model_path("onnx", "/m/1") == "/m/1/model.onnx"
    assert versions.model_path("tensorflow", "/m/1") == "/m/1"


def test_signatures_from_a_load_reply_onnx_as_serving_default_tensorflow_by_name() -> None:
    (onnx,) = versions.signatures_of({"inputs": [X], "outputs": [Y]}, check_shapes=True).values()
    assert onnx.name == "serving_default" and onnx.inputs[0].shape == (-1, 4) and onnx.check_shapes
    wire = {
        "signatures": {
            "serving_default": {"inputs": [X], "outputs": [Y]},
            "regress": {"inputs": [X], "outputs": [Y], "method_name": "tensorflow/serving/regress"},
        }
    }
    by_name = versions.signatures_of(wire, check_shapes=False)
    assert list(by_name) == ["serving_default", "regress"]
    assert by_name["regress"].method_name == "tensorflow/serving/regress"
    assert not by_name["regress"].check_shapes
