"""A real worker process serving TensorFlow SavedModels (workers/backends/tensorflow.py), driven
over its channel as the gateway does. The SavedModels are built in a subprocess
(tf_models_script.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway._pb.tensorflow.core.example import example_pb2
from tests.support.tf_models_script import models_root
from tests.support.worker_harness import Harness


def example(**features: float) -> bytes:
    proto = example_pb2.Example()
    for name, value in features.items():
        proto.features.feature[name].float_list.value.append(value)
    return proto.SerializeToString()


def strings(*items: bytes) -> np.ndarray[Any, Any]:
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


@pytest.fixture(scope="module")
def tf_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models_root(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def worker(tf_models: Path) -> Iterator[Harness]:
    harness = Harness()
    try:
        for name in ("half_plus_two", "tf2_multi", "keras_seq"):
            version = "123" if name == "half_plus_two" else "1"
            reply = harness.load(name, str(tf_models / name / version), platform="tensorflow")
            assert reply["ok"], reply
        yield harness
    finally:
        harness.close()


def test_load_reports_every_signature_def(worker: Harness, tf_models: Path) -> None:
    reply = worker.load(
        "half_plus_two", str(tf_models / "half_plus_two" / "123"), platform="tensorflow"
    )
    signatures = reply["signature"]["signatures"]
    assert sorted(signatures) == [
        "classify_x_to_y",
        "regress_x2_to_y3",
        "regress_x_to_y",
        "regress_x_to_y2",
        "serving_default",
    ]
    assert signatures["classify_x_to_y"] == {
        "inputs": [
            {"name": "inputs", "dtype": "string", "shape": [-1], "tensor_name": "tf_example:0"}
        ],
        "outputs": [{"name": "scores", "dtype": "float32", "shape": [-1, 1], "tensor_name": "y:0"}],
        "method_name": "tensorflow/serving/classify",
    }
    assert signatures["serving_default"]["method_name"] == "tensorflow/serving/predict"
    assert signatures["regress_x2_to_y3"]["inputs"][0]["tensor_name"] == "x2:0"


def test_run_by_signature(worker: Harness) -> None:
    reply, outputs = worker.run("half_plus_two", {"x": np.array([[2.0], [3.0]], np.float32)})
    assert reply["ok"], reply
    np.testing.assert_array_equal(outputs["y"], [[3.0], [3.5]])

    examples = strings(example(x=2.0), example(x=4.0, x2=1.0))
    reply, outputs = worker.run("half_plus_two", {"inputs": examples}, signature="regress_x_to_y2")
    assert reply["ok"], reply
    np.testing.assert_array_equal(outputs["outputs"], [[4.0], [5.0]])

    reply, outputs = worker.run(
        "tf2_multi", {"inputs": examples}, signature="classify_x_to_y", outputs=["scores"]
    )
    assert reply["ok"], reply
    assert list(outputs) == ["scores"]
    np.testing.assert_array_equal(outputs["scores"], [[-3.0, 3.0], [-4.0, 4.0]])


def test_string_tensors_stay_bytes(worker: Harness) -> None:
    text = strings(b"abc", b"\xff\x00binary", b"")
    reply, outputs = worker.run("tf2_multi", {"text": text}, signature="strings")
    assert reply["ok"], reply
    assert outputs["upper"].tolist() == [b"ABC", b"\xff\x00BINARY", b""]
    np.testing.assert_array_equal(outputs["length"], np.array([3, 8, 0], np.int32))


def test_keras_sequential_export(worker: Harness) -> None:
    reply, outputs = worker.run("keras_seq", {"x": np.array([[1.0], [2.5]], np.float32)})
    assert reply["ok"], reply
    (y,) = outputs.values()
    np.testing.assert_array_equal(y, [[3.0], [6.0]])


def test_errors_keep_tensorflow_codes(worker: Harness, tf_models: Path) -> None:
    reply, _ = worker.run("half_plus_two", {"inputs": strings(b"")}, signature="nope")
    assert reply["code"] == "FAILED_PRECONDITION"
    assert reply["message"] == 'Serving signature key "nope" not found.'

    missing = strings(example(x2=1.0))
    reply, _ = worker.run("half_plus_two", {"inputs": missing}, signature="regress_x_to_y")
    assert reply["code"] == "INVALID_ARGUMENT"
    assert "Feature: x (data type: float) is required but could not be found." in reply["message"]

    reply = worker.load(
        "wrong-tags",
        str(tf_models / "half_plus_two" / "123"),
        platform="tensorflow",
        tags=["serve", "gpu"],
    )
    assert reply["code"] == "NOT_FOUND"
    assert reply["message"].startswith(
        "Could not find meta graph def matching supplied tags: { serve gpu }."
    )

    reply = worker.load("none", str(tf_models), platform="tensorflow")
    assert reply["code"] == "NOT_FOUND"
    assert "Could not find SavedModel .pb or .pbtxt" in reply["message"]
