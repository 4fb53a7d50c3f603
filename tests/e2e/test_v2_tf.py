"""TensorFlow SavedModels over the Open Inference Protocol: TF Serving's own half_plus_two (and
its siblings) served by the gateway the TF Serving compatibility tests share (``served``),
driven by the official ``tritonclient`` in its own process. Answers equal the TF Serving API's
for the same inputs; a signature other than ``serving_default`` is chosen with the
``signature_name`` parameter; a version label names a version."""

from __future__ import annotations

from typing import Any

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow.core.example import example_pb2
from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.tf_compat import TWO_VERSIONS, VERSION_LABEL, Served
from tests.support.triton_gateway import Calls

X = np.array([[1.0], [2.0], [5.0]], np.float32)
CLIENTS = ("grpc", "grpc_aio", "http", "http_aio")


def _example(x: float) -> bytes:
    example = example_pb2.Example()
    example.features.feature["x"].float_list.value.append(x)
    return example.SerializeToString()


@pytest.fixture(scope="module")
def answers(served: Served, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    plan = Calls()
    for client in CLIENTS:
        plan.infer(client, client, "half_plus_two", {"x": ("FP32", X)}, request_id="h")
    plan.infer("json", "http", "half_plus_two", {"x": ("FP32", X)}, binary=False)
    plan.infer("label", "grpc", TWO_VERSIONS, {"x": ("FP32", X)}, version=VERSION_LABEL)
    examples = np.array([_example(1.0), _example(4.0)], dtype=object)
    regress = {"signature_name": "regress_x_to_y"}
    for client in ("grpc", "http"):
        plan.infer(
            f"regress_{client}",
            client,
            "half_plus_two",
            {"inputs": ("BYTES", examples)},
            parameters=regress,
        )
    plan.op("meta_http", "http", "model_metadata", model="half_plus_two")
    plan.op("ready", "grpc", "is_model_ready", model="half_plus_two", version="123")
    return plan.run(served.process, tmp_path_factory.mktemp("v2_tf"))


def _tf_serving(served: Served, x: np.ndarray) -> dict[str, np.ndarray]:
    with grpc.insecure_channel(served.process.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        return outputs_of(stub.Predict(predict_request("half_plus_two", {"x": x}), timeout=60))


@pytest.mark.parametrize("call_id", [*CLIENTS, "json", "label"])
def test_half_plus_two_answers_as_over_the_tf_serving_api(
    answers: tuple[dict[str, Any], dict[str, np.ndarray]], served: Served, call_id: str
) -> None:
    results, outputs = answers
    assert results[call_id]["ok"], results[call_id]
    response = results[call_id]["result"]["response"]
    assert response["model_version"] == "123"
    assert response.get("id", "") == ("" if call_id in ("json", "label") else "h")
    y = outputs[f"{call_id}.y"]
    np.testing.assert_array_equal(y, 0.5 * X + 2)
    np.testing.assert_array_equal(y, _tf_serving(served, X)["y"])
    assert results[call_id]["result"]["outputs"]["y"] == {"datatype": "FP32", "shape": [3, 1]}


@pytest.mark.parametrize("client", ["grpc", "http"])
def test_a_regress_signature_by_name(
    answers: tuple[dict[str, Any], dict[str, np.ndarray]], client: str
) -> None:
    """``regress_x_to_y`` takes serialized tf.Examples (BYTES) and answers y = 0.5 x + 2."""
    results, outputs = answers
    assert results[f"regress_{client}"]["ok"], results[f"regress_{client}"]
    np.testing.assert_array_equal(outputs[f"regress_{client}.outputs"], [[2.5], [4.0]])


def test_metadata_of_a_saved_model(answers: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    results, _ = answers
    assert results["meta_http"]["result"] == {
        "name": "half_plus_two",
        "versions": ["123"],
        "platform": "tensorflow_savedmodel",
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 1]}],
        "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 1]}],
    }
    assert results["ready"]["result"] is True
