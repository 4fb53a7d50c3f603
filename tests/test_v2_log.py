"""V2 ModelInfer calls as request log records (:mod:`gateway.v2_log`): raw and typed inputs of
every datatype, versions and labels, the signature parameter and requested outputs, and the
response as the servicer's encoded bytes."""

from __future__ import annotations

import io

import ml_dtypes
import numpy as np
import pytest

from gateway._pb.inference.grpc_service_pb2 import ModelInferRequest, ModelInferResponse
from gateway._pb.tensorflow_serving.apis import prediction_log_pb2
from gateway.tfserving.codec import tfrecord
from gateway.tfserving.codec.tensor_decode import to_ndarray
from gateway.transport.surface import Sampled
from gateway.v2 import datatypes, raw
from gateway.v2_log import LOG_AS, infer_as_predict

SAMPLED = Sampled(sampling_rate=0.5, attributes=3, timestamp_secs=1_700_000_000)

ARRAYS = {
    "BOOL": np.array([[True, False]]),
    "UINT8": np.array([[0, 255]], np.uint8),
    "UINT16": np.array([[1, 65535]], np.uint16),
    "UINT32": np.array([[1, 2**32 - 1]], np.uint32),
    "UINT64": np.array([[1, 2**64 - 1]], np.uint64),
    "INT8": np.array([[-128, 127]], np.int8),
    "INT16": np.array([[-1, 2]], np.int16),
    "INT32": np.array([[-1, 2**31 - 1]], np.int32),
    "INT64": np.array([[-(2**63), 5]], np.int64),
    "FP16": np.array([[0.5, -2.0]], np.float16),
    "BF16": np.array([[0.5, -2.0]], ml_dtypes.bfloat16),
    "FP32": np.array([[0.25, -1.5]], np.float32),
    "FP64": np.array([[0.125, 1e300]], np.float64),
    "BYTES": np.array([[b"a", "\u00e9".encode()]], dtype=object),
}


def _request(typed: bool) -> ModelInferRequest:
    request = ModelInferRequest(model_name="m", model_version="007", id="call-1")
    for name, array in ARRAYS.items():
        tensor = request.inputs.add(name=f"in_{name}", datatype=name, shape=array.shape)
        field = datatypes.lookup(name).field
        if typed and field is not None:
            getattr(tensor.contents, field).extend(array.ravel().tolist())
    if not typed:
        for name, array in ARRAYS.items():
            request.raw_input_contents.append(raw.to_raw(array, datatypes.lookup(name)))
    return request


def _response() -> bytes:
    response = ModelInferResponse(model_name="m", model_version="7", id="call-1")
    for name, array in ARRAYS.items():
        response.outputs.add(name=f"out_{name}", datatype=name, shape=array.shape)
        response.raw_output_contents.append(raw.to_raw(array, datatypes.lookup(name)))
    return response.SerializeToString()


@pytest.mark.parametrize("typed", [False, True], ids=["raw", "typed"])
def test_every_datatype_is_logged_as_the_tensor_sent_and_answered(typed: bool) -> None:
    request = _request(typed)
    if typed:  # FP16 and BF16 travel raw only: a typed request cannot carry them
        del request.inputs[9:11]
    framed = LOG_AS["ModelInfer"].record(request, _response(), SAMPLED)
    (record,) = tfrecord.read_records(io.BytesIO(framed))
    log = prediction_log_pb2.PredictionLog.FromString(record)
    predict = log.predict_log
    assert predict.request.model_spec.name == "m"
    assert predict.request.model_spec.version.value == 7
    assert (log.log_metadata.model_spec.name, log.log_metadata.model_spec.version.value) == (
        "m",
        7,
    )
    assert log.log_metadata.sampling_config.sampling_rate == 0.5
    assert log.log_metadata.timestamp_secs == SAMPLED.timestamp_secs
    sent = {t.name for t in request.inputs}
    assert set(predict.request.inputs) == sent
    for name, array in ARRAYS.items():
        if f"in_{name}" in sent:
            logged = to_ndarray(predict.request.inputs[f"in_{name}"], max_elements=100)
            assert logged.dtype == array.dtype and np.array_equal(logged, array), name
        answered = to_ndarray(predict.response.outputs[f"out_{name}"], max_elements=100)
        assert answered.dtype == array.dtype and np.array_equal(answered, array), name


def test_a_label_the_signature_parameter_and_requested_outputs_are_kept() -> None:
    request = ModelInferRequest(model_name="m", model_version="stable")
    request.parameters["signature_name"].string_param = "other"
    request.inputs.add(name="x", datatype="INT32", shape=[1]).contents.int_contents.append(4)
    request.outputs.add(name="y")
    response = ModelInferResponse(model_name="m", model_version="3")
    response.outputs.add(name="y", datatype="INT32", shape=[1])
    response.raw_output_contents.append(np.array([8], np.int32).tobytes())
    predict, answer = infer_as_predict(request, response)
    assert predict.model_spec.version_label == "stable"
    assert not predict.model_spec.HasField("version")
    assert predict.model_spec.signature_name == answer.model_spec.signature_name == "other"
    assert list(predict.output_filter) == ["y"]
    assert answer.model_spec.version.value == 3
    assert to_ndarray(answer.outputs["y"], max_elements=1).tolist() == [8]


def test_the_latest_version_names_none() -> None:
    request = ModelInferRequest(model_name="m")
    request.inputs.add(name="x", datatype="FP32", shape=[0])
    response = ModelInferResponse(model_name="m", model_version="2")
    predict, answer = infer_as_predict(request, response)
    assert not predict.model_spec.HasField("version") and not predict.model_spec.version_label
    assert answer.model_spec.version.value == 2
    assert to_ndarray(predict.inputs["x"], max_elements=1).shape == (0,)


def test_the_bytes_a_queued_call_holds_are_estimated_from_its_fields() -> None:
    """Within a few percent of the pair's wire size, without serializing anything."""
    for typed in (False, True):
        request, response = _request(typed), _response()
        estimate = LOG_AS["ModelInfer"].nbytes(request, response)
        wire = len(request.SerializeToString()) + len(response)
        assert 0.5 * wire <= estimate <= 2 * wire, (typed, estimate, wire)
    big = ModelInferRequest(model_name="m")
    big.inputs.add(name="x", datatype="FP32", shape=[1024, 1024])
    big.raw_input_contents.append(bytes(4 << 20))
    assert LOG_AS["ModelInfer"].nbytes(big, bytes(4 << 20)) == 8 << 20
