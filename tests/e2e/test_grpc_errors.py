"""Bad input over real gRPC: each gets the right status and text, and the server keeps serving."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow.core.framework import tensor_pb2, types_pb2
from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)
from tests.support.gateway_proc import GatewayProcess
from tests.support.grpc_calls import outputs_of, predict_request

StatusCode = grpc.StatusCode


@pytest.fixture
def stub(gateway: GatewayProcess) -> Iterator[prediction_service_pb2_grpc.PredictionServiceStub]:
    with grpc.insecure_channel(
        gateway.target, options=[("grpc.max_send_message_length", 200 * 2**20)]
    ) as channel:
        yield prediction_service_pb2_grpc.PredictionServiceStub(channel)
    # After every bad request, the same gateway still answers a good one.
    with grpc.insecure_channel(gateway.target) as channel:
        good = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        x = np.ones((1, 64), np.float32)
        assert outputs_of(good.Predict(predict_request("mlp", {"x": x}), timeout=30))[
            "probs"
        ].shape == (
            1,
            10,
        )


def call_error(
    stub: prediction_service_pb2_grpc.PredictionServiceStub, request: object
) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        stub.Predict(request, timeout=30)
    return info.value


X = np.ones((2, 64), np.float32)


def test_unknown_model(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> None:
    error = call_error(stub, predict_request("nope", {"x": X}))
    assert error.code() == StatusCode.NOT_FOUND
    assert error.details() == "Servable not found for request: Latest(nope)"


def test_unknown_version(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> None:
    error = call_error(stub, predict_request("mlp", {"x": X}, version=99))
    assert error.code() == StatusCode.NOT_FOUND
    assert error.details() == "Servable not found for request: Specific(mlp, 99)"


def test_unknown_label(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> None:
    error = call_error(stub, predict_request("mlp", {"x": X}, label="nightly"))
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert "nightly" in error.details()


def test_wrong_input_names(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> None:
    error = call_error(stub, predict_request("mlp", {"y": X, "z": X}))
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert "Sent extra: {y,z}" in error.details()
    assert "Missing but required: {x}" in error.details()


def test_wrong_dtype(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> None:
    error = call_error(stub, predict_request("mlp", {"x": X.astype(np.float64)}))
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert "float64" in error.details() and "float32" in error.details()


@pytest.mark.parametrize("shape", [(64,), (2, 63), (1, 2, 64)])
def test_wrong_shape(
    stub: prediction_service_pb2_grpc.PredictionServiceStub, shape: tuple[int, ...]
) -> None:
    error = call_error(stub, predict_request("mlp", {"x": np.ones(shape, np.float32)}))
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert "shape" in error.details()


def test_tensor_content_of_wrong_length(
    stub: prediction_service_pb2_grpc.PredictionServiceStub,
) -> None:
    request = predict_request("mlp", {"x": X})
    request.inputs["x"].tensor_content = request.inputs["x"].tensor_content[:-4]
    error = call_error(stub, request)
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert "'x'" in error.details()


def test_huge_declared_shape_without_data(
    stub: prediction_service_pb2_grpc.PredictionServiceStub,
) -> None:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "mlp"
    tensor: tensor_pb2.TensorProto = request.inputs["x"]
    tensor.dtype = types_pb2.DT_FLOAT
    tensor.tensor_shape.dim.add(size=10**12 // 64)
    tensor.tensor_shape.dim.add(size=64)
    error = call_error(stub, request)
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert "1000000000000" in error.details()


def test_request_over_the_message_limit(
    stub: prediction_service_pb2_grpc.PredictionServiceStub,
) -> None:
    big = np.zeros((100 * 2**20 // 256, 64), np.float32)  # 100 MiB
    error = call_error(stub, predict_request("mlp", {"x": big}))
    assert error.code() == StatusCode.RESOURCE_EXHAUSTED


def test_unknown_signature(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> None:
    error = call_error(stub, predict_request("mlp", {"x": X}, signature="classify_me"))
    assert error.code() == StatusCode.FAILED_PRECONDITION
    assert error.details() == 'Serving signature key "classify_me" not found.'


def test_bad_output_filter(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> None:
    error = call_error(stub, predict_request("mlp", {"x": X}, output_filter=["nope"]))
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert "output tensor alias not found in signature: nope" in error.details()


def test_long_messages_are_truncated(
    stub: prediction_service_pb2_grpc.PredictionServiceStub,
) -> None:
    error = call_error(stub, predict_request("mlp", {"q" * 3000: X}))
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert len(error.details()) == 1024
    assert error.details().endswith("...TRUNCATED")


def test_missing_model_spec(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> None:
    error = call_error(stub, predict_pb2.PredictRequest())
    assert error.code() == StatusCode.INVALID_ARGUMENT


def test_metadata_errors(gateway: GatewayProcess) -> None:
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = get_model_metadata_pb2.GetModelMetadataRequest()
        request.model_spec.name = "mlp"
        with pytest.raises(grpc.RpcError) as info:
            stub.GetModelMetadata(request, timeout=30)
        assert info.value.code() == StatusCode.INVALID_ARGUMENT
        request.metadata_field.append("signature_def")
        request.model_spec.name = "nope"
        with pytest.raises(grpc.RpcError) as info:
            stub.GetModelMetadata(request, timeout=30)
        assert info.value.code() == StatusCode.NOT_FOUND


def test_status_errors(gateway: GatewayProcess) -> None:
    with grpc.insecure_channel(gateway.target) as channel:
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        request = get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = "nope"
        with pytest.raises(grpc.RpcError) as info:
            stub.GetModelStatus(request, timeout=30)
        assert info.value.code() == StatusCode.NOT_FOUND
        assert info.value.details() == "Could not find any versions of model nope"
        request.model_spec.name = "mlp"
        request.model_spec.version.value = 5
        with pytest.raises(grpc.RpcError) as info:
            stub.GetModelStatus(request, timeout=30)
        assert info.value.details() == "Could not find version 5 of model mlp"


def test_request_without_model_spec(
    stub: prediction_service_pb2_grpc.PredictionServiceStub,
) -> None:
    error = call_error(stub, predict_pb2.PredictRequest())
    assert error.code() == StatusCode.INVALID_ARGUMENT
    assert error.details() == "Missing ModelSpec"


def test_model_spec_with_empty_name(
    stub: prediction_service_pb2_grpc.PredictionServiceStub,
) -> None:
    request = predict_pb2.PredictRequest()
    request.model_spec.signature_name = "serving_default"  # present, but names no model
    error = call_error(stub, request)
    assert error.code() == StatusCode.NOT_FOUND
    assert error.details() == "Servable not found for request: Latest()"


def test_undecodable_messages_are_invalid_argument_with_a_quiet_log(
    gateway: GatewayProcess,
) -> None:
    """Each one answered UNKNOWN and wrote a full ERROR traceback (40 MB of log in 2 minutes of
    fuzzing); now INVALID_ARGUMENT, and one log line a minute with a count, without the bytes."""
    garbage = [b"\xff\xff\xff\xff", b"\x0a\x05abc", b"\x12\xff\xff\xff\xff\x0f" + b"junk" * 50]
    before = len(gateway.log())
    with grpc.insecure_channel(gateway.target) as channel:
        for method in ("Predict", "GetModelMetadata", "Classify"):
            call = channel.unary_unary(f"/tensorflow.serving.PredictionService/{method}")
            for _ in range(100):
                for data in garbage:
                    with pytest.raises(grpc.RpcError) as info:
                        call(data, timeout=30)
                    assert info.value.code() == StatusCode.INVALID_ARGUMENT
                    assert info.value.details().startswith("the request is not a valid tensorflow")
        health = channel.unary_unary("/grpc.health.v1.Health/Check")
        with pytest.raises(grpc.RpcError) as info:
            health(b"\xff\xff", timeout=30)
        assert info.value.code() == StatusCode.INVALID_ARGUMENT
    log = gateway.log()[before:]
    lines = [line for line in log.splitlines() if "undecodable gRPC requests" in line]
    assert len(lines) <= 2, lines  # a line may have come from an earlier test in this minute
    assert "Traceback" not in log and "junk" not in log


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"model": "../mlp"}, StatusCode.NOT_FOUND),
        ({"model": "mlp/../mlp"}, StatusCode.NOT_FOUND),
        ({"model": "/etc/passwd"}, StatusCode.NOT_FOUND),
        ({"model": "mlp", "label": "../../1"}, StatusCode.INVALID_ARGUMENT),
        ({"model": "mlp", "version": 2**63 - 1}, StatusCode.NOT_FOUND),
    ],
)
def test_names_labels_and_versions_never_become_file_paths(
    stub: prediction_service_pb2_grpc.PredictionServiceStub,
    spec: dict[str, object],
    code: grpc.StatusCode,
) -> None:
    """A model is found by its configured name only; a path-like name, label or version is just
    an unknown one (nothing on disk is looked up from a request)."""
    request = predict_request(str(spec.pop("model")), {"x": X}, **spec)
    error = call_error(stub, request)
    assert error.code() == code, error.details()
