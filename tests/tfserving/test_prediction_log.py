"""TF Serving's request log records: REST calls as their gRPC twins (a predict as the Predict it
stands for, ``:classify`` / ``:regress`` as a Classify / Regress), and the bytes a queued call
holds, estimated from its fields' lengths on the loop."""

from __future__ import annotations

import io

import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    input_pb2,
    prediction_log_pb2,
    regression_pb2,
)
from gateway.observability.request_log import TensorRequest
from gateway.serving.core import ModelRef, PredictResult
from gateway.tfserving.codec import inference_messages, tfrecord
from gateway.tfserving.codec.example import input_from_json
from gateway.tfserving.codec.tensor_decode import to_ndarray as decode
from gateway.tfserving.inference import InferenceResult
from gateway.tfserving.inference_results import Classifications, Regressions
from gateway.tfserving.prediction_log import (
    LOG_AS,
    REST_EXAMPLES,
    ExamplesRequest,
    as_predict,
    owned,
    tensors,
)
from gateway.tfserving.rest.json_request import loads
from gateway.transport.surface import Sampled
from tests.support.grpc_calls import predict_request


def to_ndarray(tensor: object) -> np.ndarray:
    return decode(tensor, max_elements=1 << 20)  # type: ignore[arg-type]


SAMPLED = Sampled(sampling_rate=1.0, attributes=0, timestamp_secs=1_700_000_000)


def _log(framed: bytes) -> prediction_log_pb2.PredictionLog:
    (record,) = tfrecord.read_records(io.BytesIO(framed))
    return prediction_log_pb2.PredictionLog.FromString(record)


@pytest.mark.parametrize(
    ("ref", "version", "label"),
    [
        (ModelRef("m"), 0, ""),
        (ModelRef("m", 3), 3, ""),
        (ModelRef("m", None, "stable"), 0, "stable"),
    ],
)
def test_a_rest_predict_is_the_predict_it_stands_for(
    ref: ModelRef, version: int, label: str
) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    words = np.array([b"a", b"bc"], dtype=object)
    asked = TensorRequest(ref, "", {"x": x, "w": words}, ("y",))
    answered = PredictResult("m", 3, "serving_default", {"y": x * 2})
    log = _log(tensors(asked, answered, SAMPLED))
    request, response = log.predict_log.request, log.predict_log.response
    spec = request.model_spec
    assert (spec.name, spec.version.value, spec.version_label, spec.signature_name) == (
        "m",
        version,
        label,
        "",
    )
    assert list(request.output_filter) == ["y"]
    assert np.array_equal(to_ndarray(request.inputs["x"]), x)
    assert request.inputs["x"].float_val  # typed fields, as TF Serving's JSON reader fills
    assert to_ndarray(request.inputs["w"]).tolist() == [b"a", b"bc"]
    assert (response.model_spec.version.value, response.model_spec.signature_name) == (
        3,
        "serving_default",
    )
    assert np.array_equal(to_ndarray(response.outputs["y"]), x * 2)
    assert log.log_metadata.model_spec == response.model_spec


def test_a_rest_predict_is_logged_as_a_grpc_predict_of_the_same_values_would_be() -> None:
    x = np.ones((1, 4), np.float32)
    asked = TensorRequest(ModelRef("m", 1), "sig", {"x": x})
    answered = PredictResult("m", 1, "sig", {"y": x})
    rest_request, rest_response = as_predict(asked, answered)
    grpc_request = predict_request("m", {"x": x}, version=1, signature="sig", content=False)
    assert rest_request == grpc_request
    grpc_log = _log(LOG_AS["Predict"].record(grpc_request, rest_response, SAMPLED))
    assert _log(tensors(asked, answered, SAMPLED)) == grpc_log


def _examples() -> input_pb2.Input:
    return input_from_json(loads(b'{"examples": [{"x": 1.0, "n": 1}, {"x": 2.0, "n": 2}]}'))


def test_rest_classify_and_regress_are_their_grpc_twins() -> None:
    asked = ExamplesRequest(ModelRef("m", None, "stable"), "", _examples())
    labels = np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object)
    scores = np.array([[0.1, 0.9], [0.8, 0.2]], np.float32)
    classified = owned(InferenceResult("m", 4, "serving_default", Classifications(labels, scores)))
    log = _log(REST_EXAMPLES["classify"](asked, classified, SAMPLED))
    assert log.classify_log.request.model_spec.version_label == "stable"
    assert log.classify_log.request.input == asked.input
    expected = inference_messages.classification_response(classified)
    assert log.classify_log.response == expected
    assert isinstance(expected, classification_pb2.ClassificationResponse)
    regressed = owned(
        InferenceResult("m", 4, "serving_default", Regressions(np.array([1.5, 2.5], np.float32)))
    )
    log = _log(REST_EXAMPLES["regress"](asked, regressed, SAMPLED))
    assert log.regress_log.response == inference_messages.regression_response(regressed)
    assert isinstance(log.regress_log.response, regression_pb2.RegressionResponse)
    assert log.log_metadata.model_spec.version.value == 4


def test_owned_results_do_not_share_the_worker_arrays() -> None:
    scores = np.zeros((1, 2), np.float32)
    kept = owned(InferenceResult("m", 1, "s", Classifications(None, scores)))
    scores[:] = 7.0  # the worker's space, given back and reused
    assert isinstance(kept.result, Classifications) and kept.result.scores is not None
    assert kept.result.scores.tolist() == [[0.0, 0.0]]


def test_the_bytes_a_queued_call_holds_are_estimated_from_its_fields() -> None:
    """Close to the wire size for each method, and exact for the tensors' payload."""
    x = np.zeros((256, 256), np.float32)
    for content in (True, False):
        request = predict_request("m", {"x": x}, content=content)
        response = bytes(1000)
        estimate = LOG_AS["Predict"].nbytes(request, response)
        assert x.nbytes + 1000 <= estimate <= x.nbytes + 1000 + 64
    classify = classification_pb2.ClassificationRequest(input=_examples())
    wire = len(classify.SerializeToString())
    estimate = LOG_AS["Classify"].nbytes(classify, b"")
    assert 0.5 * wire <= estimate <= 4 * wire, (estimate, wire)
