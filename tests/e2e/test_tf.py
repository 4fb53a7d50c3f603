"""TensorFlow SavedModels and tf.Example APIs through a real gateway, driven by the official
TF Serving client in its own process: TF Serving's model-server tests on half_plus_two /
half_plus_three (Predict, Classify, Regress, MultiInference, metadata), TF2 and Keras SavedModels,
Classify/Regress on an ONNX model whose inputs are Example features, and the error cases."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.onnx_models import onnx_examples
from tests.support.paths import SUPPORT
from tests.support.tf_models_script import models_root

pytestmark = pytest.mark.tfclient

CLIENT = SUPPORT / "tf_inference_client_script.py"
CLIENT_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def tf_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SavedModels, an ONNX Example model, and a config serving them (platforms detected,
    except half_plus_three which names ``model_platform: "tensorflow"``)."""
    root = models_root(tmp_path_factory.getbasetemp())
    onnx_dir = tmp_path_factory.mktemp("onnx_examples")
    onnx_examples(onnx_dir / "1" / "model.onnx")
    config = tmp_path_factory.mktemp("tf_config") / "models.config"
    entries = [f'config {{ name: "{m}" base_path: "{root / m}" }}' for m in ("half_plus_two",)]
    entries += [
        f'config {{ name: "half_plus_three" base_path: "{root / "half_plus_three"}" '
        'model_platform: "tensorflow" }',
        f'config {{ name: "tf2_multi" base_path: "{root / "tf2_multi"}" }}',
        f'config {{ name: "keras_seq" base_path: "{root / "keras_seq"}" }}',
        f'config {{ name: "onnx_examples" base_path: "{onnx_dir}" }}',
    ]
    config.write_text("model_config_list {\n  " + "\n  ".join(entries) + "\n}\n")
    return config


@pytest.fixture(scope="module")
def tf_gateway(tf_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One worker (TensorFlow costs ~600 MB per worker process), one thread each."""
    args = [
        f"--model_config_file={tf_repo}",
        "--workers=1",
        "--tensorflow_intra_op_parallelism=1",
        "--tensorflow_inter_op_parallelism=1",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path_factory.mktemp("tf_logs")) as process:
        yield process


@pytest.fixture(scope="module")
def calls(tf_gateway: GatewayProcess, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every call of tf_inference_client_script.py against the gateway, by name."""
    out = tmp_path_factory.mktemp("tf_client") / "calls.json"
    done = subprocess.run(
        [sys.executable, str(CLIENT), tf_gateway.target, str(out)],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [DIWEC] \d+ (gateway|worker-\d+) [\w.]+\] "
)


def test_tensorflow_start_up_noise_stays_out_of_the_log(
    tf_gateway: GatewayProcess, calls: dict[str, Any]
) -> None:
    """TensorFlow loaded and served in the worker; every log line is still tensorgate's."""
    lines = tf_gateway.log().splitlines()
    assert any("loaded half_plus_two" in line and " worker-0 " in line for line in lines)
    assert [line for line in lines if not LOG_LINE.match(line)] == []


def spec(model: str, signature: str, version: str = "123") -> dict[str, str]:
    return {"name": model, "signatureName": signature, "version": version}


def error(calls: dict[str, Any], name: str) -> tuple[str, str]:
    assert "error" in calls[name], calls[name]
    code, details = calls[name]["error"]
    return code, details


def test_predict_half_plus_two_and_three(calls: dict[str, Any]) -> None:
    assert calls["predict_y"] == {
        "model_spec": spec("half_plus_two", "serving_default"),
        "outputs": {"y": {"dtype": "float32", "value": [3.0], "shape": [1, 1]}},
    }
    assert calls["predict_all"]["outputs"] == {
        "y": {"dtype": "float32", "value": [3.0, 4.0], "shape": [2, 1]}
    }
    assert calls["predict_three"]["outputs"]["y"]["value"] == [4.0]


def test_classify_regress_multi_inference_half_plus_two(calls: dict[str, Any]) -> None:
    assert calls["classify"] == {
        "result": {"classifications": [{"classes": [{"score": 3.0}]}]},
        "modelSpec": spec("half_plus_two", "classify_x_to_y"),
    }
    assert calls["regress"] == {
        "result": {"regressions": [{"value": 3.0}]},
        "modelSpec": spec("half_plus_two", "regress_x_to_y"),
    }
    assert calls["regress_three"]["result"] == {"regressions": [{"value": 4.0}]}
    assert calls["multi"] == {
        "results": [
            {
                "modelSpec": spec("half_plus_two", "regress_x_to_y"),
                "regressionResult": {"regressions": [{"value": 3.0}]},
            },
            {
                "modelSpec": spec("half_plus_two", "classify_x_to_y"),
                "classificationResult": {"classifications": [{"classes": [{"score": 3.0}]}]},
            },
        ]
    }
    assert calls["regress_y2_many"]["result"] == {"regressions": [{"value": 3.5}, {"value": 1.0}]}


def test_tf2_signatures_classify_with_labels_and_context(calls: dict[str, Any]) -> None:
    assert calls["predict_tf2"]["outputs"]["y"]["value"] == [12.0]
    assert calls["predict_tf2"]["model_spec"] == spec("tf2_multi", "serving_default", "1")
    assert calls["predict_tf2_custom"]["outputs"]["y"]["value"] == [4.0]
    assert calls["predict_tf2_custom"]["model_spec"]["signatureName"] == "times_two"
    classes = calls["classify_tf2_context"]["result"]["classifications"]
    assert classes == [
        {"classes": [{"label": "neg", "score": -3.0}, {"label": "pos", "score": 3.0}]},
        {"classes": [{"label": "neg", "score": -5.0}, {"label": "pos", "score": 5.0}]},
    ]
    assert calls["regress_tf2"]["result"] == {"regressions": [{"value": 3.0}]}
    results = calls["multi_tf2"]["results"]
    assert results[0]["regressionResult"] == {"regressions": [{"value": 3.0}]}
    assert results[1]["classificationResult"]["classifications"][0]["classes"][1] == {
        "label": "pos",
        "score": 3.0,
    }


def test_keras_sequential(calls: dict[str, Any]) -> None:
    (output,) = calls["predict_keras"]["outputs"].values()
    assert output == {"dtype": "float32", "value": [5.0], "shape": [1, 1]}


def test_onnx_model_parses_examples_into_its_inputs(calls: dict[str, Any]) -> None:
    assert calls["classify_onnx"] == {
        "result": {
            "classifications": [
                {"classes": [{"score": 4.0}, {"score": -4.0}]},
                {"classes": [{"score": 1.0}, {"score": -1.0}]},
            ]
        },
        "modelSpec": spec("onnx_examples", "serving_default", "1"),
    }
    assert calls["regress_onnx_context"]["result"] == {
        "regressions": [{"value": 4.0}, {"value": 9.0}]
    }
    assert error(calls, "regress_onnx_missing_feature") == (
        "INVALID_ARGUMENT",
        "Feature: n (data type: int64) is required but could not be found.",
    )
    assert error(calls, "regress_onnx_wrong_kind") == (
        "INVALID_ARGUMENT",
        "Name: <unknown>, Key: n, Index: 0.  Data types don't match. Data type: float but "
        "expected type: int64",
    )


def test_metadata_has_every_signature_def(calls: dict[str, Any]) -> None:
    meta = calls["metadata"]
    assert meta["model_spec"] == {"name": "half_plus_two", "version": "123"}
    signatures = meta["signature_def"]
    assert sorted(signatures) == [
        "classify_x_to_y",
        "regress_x2_to_y3",
        "regress_x_to_y",
        "regress_x_to_y2",
        "serving_default",
    ]
    classify = signatures["classify_x_to_y"]
    assert classify["methodName"] == "tensorflow/serving/classify"
    assert classify["inputs"]["inputs"]["dtype"] == "DT_STRING"
    assert classify["inputs"]["inputs"]["tensorShape"] == {"dim": [{"size": "-1"}]}
    assert classify["outputs"]["scores"]["dtype"] == "DT_FLOAT"
    assert signatures["regress_x2_to_y3"]["inputs"]["inputs"]["dtype"] == "DT_FLOAT"
    assert signatures["serving_default"]["methodName"] == "tensorflow/serving/predict"


def test_errors_match_tf_serving(calls: dict[str, Any]) -> None:
    assert error(calls, "classify_unknown_signature") == (
        "INVALID_ARGUMENT",
        "No signature was found with the name: nope",
    )
    code, details = error(calls, "regress_on_classify_signature")
    assert code == "INVALID_ARGUMENT"
    assert details.startswith("No regression outputs found in SignatureDef: ")
    code, details = error(calls, "classify_on_predict_signature")
    assert code == "INVALID_ARGUMENT"
    assert details.startswith("No classification inputs found in SignatureDef: ")
    code, details = error(calls, "regress_missing_feature")
    assert code == "INVALID_ARGUMENT"
    assert "Feature: x (data type: float) is required but could not be found." in details
    assert error(calls, "classify_empty") == ("INVALID_ARGUMENT", "Input is empty.")
    assert error(calls, "classify_missing_model") == (
        "NOT_FOUND",
        "Servable not found for request: Latest(missing)",
    )
    assert error(calls, "multi_duplicate") == (
        "INVALID_ARGUMENT",
        "Duplicate evaluation of signature: regress_x_to_y",
    )
    assert error(calls, "multi_other_input") == (
        "INVALID_ARGUMENT",
        "Input tensor must be the same for all Signatures.",
    )
    assert error(calls, "multi_two_models") == (
        "INVALID_ARGUMENT",
        "All ModelSpecs in a MultiInferenceRequest must access the same model name.",
    )
    assert error(calls, "multi_predict_method") == (
        "UNIMPLEMENTED",
        "Unsupported signature method_name: tensorflow/serving/predict",
    )
