"""Real worker processes serving ONNX models and SavedModels on OpenVINO
(workers/backends/openvino.py), driven over their channel as the gateway does, in an
environment where TensorFlow cannot be imported; outputs compared with ONNX Runtime's and the
models' own arithmetic within the README's tolerances."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import pytest

from tests.support.import_block import blocked_env
from tests.support.onnx_models import mlp
from tests.support.ort import run_reference
from tests.support.tf_compat_models_script import compat_models_root
from tests.support.tf_models_script import models_root
from tests.support.worker_harness import Harness
from workers.backends import openvino as openvino_backend

TOLERANCE = {"openvino_fp32": 1e-5, "openvino_bf16": 5e-2}
"""Largest |OpenVINO - reference| allowed, relative to the reference's largest magnitude (the
README's table: fp32 measured ~1e-7 here, bf16 ~1e-2 on AVX512_BF16 CPUs)."""

BF16_CPU = "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
"""Whether this CPU runs bf16 (OpenVINO's CPU plugin runs f32 where it cannot)."""


def assert_close(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any], runtime: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    scale = float(np.abs(want).max()) or 1.0
    assert float(np.abs(got - want).max()) <= TOLERANCE[runtime] * scale


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mlp(tmp_path_factory.mktemp("ov_mlp") / "1" / "model.onnx")


@pytest.fixture(scope="module")
def tf_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models_root(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def no_tf_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """A worker in which ``import tensorflow`` fails, as in the ONNX image."""
    env = blocked_env(tmp_path_factory.mktemp("no_tf"), "tensorflow")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", env["PYTHONPATH"])
        harness = Harness()
    try:
        yield harness
    finally:
        harness.close()


def test_compile_config_always_sets_precision_and_threads() -> None:
    for precision, hint in (("fp32", "f32"), ("bf16", "bf16")):
        config = openvino_backend.compile_config(precision, 3)
        assert config["INFERENCE_PRECISION_HINT"] == hint
        assert config["INFERENCE_NUM_THREADS"] == 3
        assert config["NUM_STREAMS"] == 1
        assert config["ENABLE_CPU_PINNING"] is False


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_onnx_model_matches_onnx_runtime(
    no_tf_worker: Harness, onnx_model: Path, precision: str
) -> None:
    key = f"mlp_{precision}"
    reply = no_tf_worker.load(key, str(onnx_model), runtime="openvino", precision=precision)
    assert reply["ok"], reply
    runtime = reply["signature"]["runtime"]
    assert runtime == ("openvino_bf16" if precision == "bf16" and BF16_CPU else "openvino_fp32")
    assert reply["signature"]["inputs"] == [{"name": "x", "dtype": "float32", "shape": [-1, 64]}]
    x = np.random.default_rng(7).standard_normal((5, 64)).astype(np.float32)
    run, outputs = no_tf_worker.run(key, {"x": x})
    assert run["ok"], run
    expected = run_reference(onnx_model, {"x": x})
    assert list(outputs) == list(expected) == ["logits", "probs"]
    for name, value in expected.items():
        assert_close(outputs[name], value, runtime)


def test_output_names_and_bound(onnx_model: Path) -> None:
    harness = Harness(output_bytes=4096)
    try:
        reply = harness.load("mlp", str(onnx_model), runtime="openvino")
        assert reply["ok"], reply
        x = np.zeros((2, 64), np.float32)
        run, outputs = harness.run("mlp", {"x": x}, outputs=["probs"])
        assert run["ok"] and list(outputs) == ["probs"]
        run, _ = harness.run("mlp", {"x": x}, outputs=["nope"])
        assert run["code"] == "INVALID_ARGUMENT" and "'nope'" in run["message"]
        run, _ = harness.run("mlp", {"x": np.zeros((200, 64), np.float32)})
        assert run["code"] == "RESOURCE_EXHAUSTED"
        assert "exceed the worker's output arena" in run["message"]
        run, outputs = harness.run("mlp", {"x": x})  # the worker goes on serving
        assert run["ok"] and outputs["probs"].shape == (2, 10)
    finally:
        harness.close()


def test_saved_model_without_tensorflow_keeps_its_signature(
    no_tf_worker: Harness, tf_models: Path
) -> None:
    """keras_seq: y = 2 x + 1, its signature as the TensorFlow worker reports it
    (tests/workers/backends/test_tensorflow.py; tests/e2e/test_openvino.py compares both with
    TensorFlow itself)."""
    path = str(tf_models / "keras_seq" / "1")
    reply = no_tf_worker.load("keras_seq", path, platform="tensorflow", runtime="openvino")
    assert reply["ok"], reply
    assert reply["signature"]["runtime"] == "openvino_fp32"
    assert reply["signature"]["signatures"] == {
        "serving_default": {
            "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 1]}],
            "outputs": [{"name": "output_0", "dtype": "float32", "shape": [-1, 1]}],
            "method_name": "tensorflow/serving/predict",
        }
    }
    x = np.array([[1.0], [2.5], [-4.0]], np.float32)
    run, got = no_tf_worker.run("keras_seq", {"x": x})
    assert run["ok"], run
    assert list(got) == ["output_0"]
    assert_close(got["output_0"], 2 * x + 1, "openvino_fp32")


def test_an_output_that_is_its_input_keeps_the_signature_names(
    no_tf_worker: Harness, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """TF Serving's keras_sequential_saved_model_save: y = identity(x), one tensor with both
    names; the signature's aliases name the input and the output."""
    root = compat_models_root(tmp_path_factory.getbasetemp())
    path = root / "keras_sequential_saved_model_save" / "00000123"
    reply = no_tf_worker.load("ks", str(path), platform="tensorflow", runtime="openvino")
    assert reply["ok"], reply
    served = reply["signature"]["signatures"]["serving_default"]
    assert served["inputs"] == [{"name": "x", "dtype": "float32", "shape": [-1, 1]}]
    assert served["outputs"] == [{"name": "y", "dtype": "float32", "shape": [-1, 1]}]
    x = np.array([[1.5], [-2.0]], np.float32)
    run, outputs = no_tf_worker.run("ks", {"x": x})
    assert run["ok"], run
    assert list(outputs) == ["y"]
    np.testing.assert_array_equal(outputs["y"], x)


@pytest.mark.parametrize(
    ("name", "version", "reason"),
    [
        ("half_plus_two", "123", "tf_example"),  # the string input it parses tf.Example from
        ("tf2_multi", "1", "dynamic rank"),  # serving_default's x has no rank
    ],
)
def test_saved_model_that_does_not_convert_names_the_reason(
    no_tf_worker: Harness, tf_models: Path, name: str, version: str, reason: str
) -> None:
    path = tf_models / name / version
    reply = no_tf_worker.load(name, str(path), platform="tensorflow", runtime="openvino")
    assert reply["code"] == "FAILED_PRECONDITION"
    assert reply["message"].startswith(f"model {path} does not convert to OpenVINO: ")
    assert reason in reply["message"]
    assert "Exception from src/" not in reply["message"]  # OpenVINO's source locations
    assert no_tf_worker.ping()["ok"]


def test_saved_model_tags_other_than_serve_are_refused(
    no_tf_worker: Harness, tf_models: Path
) -> None:
    path = str(tf_models / "keras_seq" / "1")
    reply = no_tf_worker.load(
        "gpu", path, platform="tensorflow", runtime="openvino", tags=["serve", "gpu"]
    )
    assert reply["code"] == "FAILED_PRECONDITION"
    assert "'serve' MetaGraph only" in reply["message"]


def test_missing_openvino_is_a_load_error(onnx_model: Path, tmp_path: Path) -> None:
    env = blocked_env(tmp_path, "openvino")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", env["PYTHONPATH"])
        harness = Harness()
    try:
        reply = harness.load("mlp", str(onnx_model), runtime="openvino")
        assert reply["code"] == "FAILED_PRECONDITION"
        assert "pip install 'tensorgate[openvino]'" in reply["message"]
        assert harness.ping()["ok"]  # not a crash: the worker serves on
        assert harness.load("mlp", str(onnx_model))["ok"]  # ONNX Runtime still loads it
    finally:
        harness.close()
