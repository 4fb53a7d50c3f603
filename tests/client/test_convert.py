"""gateway.client: message building and decoding, and the clients over a real channel.

The server here is a scripted in-process PredictionService/ModelService on port 0 that records
what it receives; the client against the real gateway is covered by the end-to-end tests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow.core.framework import types_pb2
from gateway._pb.tensorflow.core.protobuf import meta_graph_pb2
from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)
from gateway._pb.xla.tsl.protobuf import error_codes_pb2
from gateway.client import (
    AsyncClient,
    Client,
    metadata_dict,
    predict_request,
    status_list,
)
from gateway.client.cli import DIGIT_ZERO, main
from gateway.errors import InvalidArgument
from gateway.tfserving.codec import tensor as tensor_codec
from tests.support.ort import run_reference
from tests.support.paths import DEMO_MODEL

DIGITS_MODEL = DEMO_MODEL


def _tensor_info(dtype: str, shape: list[int] | None) -> meta_graph_pb2.TensorInfo:
    info = meta_graph_pb2.TensorInfo(name=f"{dtype}:0")
    info.dtype = types_pb2.DataType.ValueType(tensor_codec.data_type(dtype))
    if shape is None:
        info.tensor_shape.unknown_rank = True
    for size in shape or ():
        info.tensor_shape.dim.add(size=size)
    return info


def _digits_metadata() -> get_model_metadata_pb2.GetModelMetadataResponse:
    signature = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/predict")
    signature.inputs["images"].CopyFrom(_tensor_info("float32", [-1, 64]))
    signature.outputs["probabilities"].CopyFrom(_tensor_info("float32", [-1, 10]))
    signature.outputs["label"].CopyFrom(_tensor_info("int64", [-1]))
    other = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/classify")
    other.inputs["text"].CopyFrom(_tensor_info("string", None))
    other.outputs["scores"].CopyFrom(_tensor_info("bfloat16", []))
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    signature_map.signature_def["serving_default"].CopyFrom(signature)
    signature_map.signature_def["classify"].CopyFrom(other)
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.model_spec.name = "digits"
    response.model_spec.version.value = 1
    response.metadata["signature_def"].Pack(signature_map)
    return response


DIGITS_METADATA = {
    "model_spec": {
        "name": "digits",
        "version": 1,
        "version_label": None,
        "signature_name": "",
    },
    "signature_def": {
        "classify": {
            "inputs": {"text": {"dtype": "string", "shape": None}},
            "outputs": {"scores": {"dtype": "bfloat16", "shape": []}},
            "method_name": "tensorflow/serving/classify",
        },
        "serving_default": {
            "inputs": {"images": {"dtype": "float32", "shape": [-1, 64]}},
            "outputs": {
                "label": {"dtype": "int64", "shape": [-1]},
                "probabilities": {"dtype": "float32", "shape": [-1, 10]},
            },
            "method_name": "tensorflow/serving/predict",
        },
    },
}


def _status_response() -> get_model_status_pb2.GetModelStatusResponse:
    response = get_model_status_pb2.GetModelStatusResponse()
    states = get_model_status_pb2.ModelVersionStatus
    response.model_version_status.add(version=2, state=states.LOADING)
    failed = response.model_version_status.add(version=1, state=states.END)
    failed.status.error_code = error_codes_pb2.INVALID_ARGUMENT
    failed.status.error_message = "bad model"
    return response


STATUS = [
    {"version": 2, "state": "LOADING", "status": {"error_code": "OK", "error_message": ""}},
    {
        "version": 1,
        "state": "END",
        "status": {"error_code": "INVALID_ARGUMENT", "error_message": "bad model"},
    },
]


def test_metadata_dict_decodes_signature_def_map() -> None:
    assert metadata_dict(_digits_metadata()) == DIGITS_METADATA


def test_metadata_dict_without_signature_def_and_with_label() -> None:
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.model_spec.name = "m"
    response.model_spec.version_label = "stable"
    response.model_spec.signature_name = "sig"
    assert metadata_dict(response) == {
        "model_spec": {
            "name": "m",
            "version": None,
            "version_label": "stable",
            "signature_name": "sig",
        },
        "signature_def": {},
    }


def test_metadata_dict_rejects_a_foreign_any() -> None:
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.metadata["signature_def"].Pack(get_model_status_pb2.GetModelStatusResponse())
    with pytest.raises(ValueError, match=r"tensorflow\.serving\.GetModelStatusResponse"):
        metadata_dict(response)


def test_status_list_names_states_and_codes() -> None:
    assert status_list(_status_response()) == STATUS


def test_predict_request_sends_numbers_as_tensor_content_and_strings_typed() -> None:
    images = np.arange(128, dtype=np.float32).reshape(2, 64)
    request = predict_request(
        "digits",
        {
            "images": images,
            "names": np.array(["a", b"b"], dtype=object),
            "flags": np.array([True, False]),
        },
        version_label="canary",
        output_filter=["label"],
    )
    assert request.model_spec.name == "digits"
    assert request.model_spec.version_label == "canary"
    assert request.model_spec.signature_name == "serving_default"
    assert list(request.output_filter) == ["label"]
    assert request.inputs["images"].tensor_content == images.tobytes()
    assert not request.inputs["images"].float_val
    assert request.inputs["flags"].tensor_content == b"\x01\x00"
    assert list(request.inputs["names"].string_val) == [b"a", b"b"]
    decoded = tensor_codec.to_ndarray(request.inputs["images"], max_elements=128)
    np.testing.assert_array_equal(decoded, images)


def test_predict_request_version_and_label_are_exclusive() -> None:
    with pytest.raises(ValueError, match="not both"):
        predict_request("m", {}, version=1, version_label="stable")


def test_predict_request_rejects_unsupported_dtype() -> None:
    with pytest.raises(InvalidArgument):
        predict_request("m", {"x": np.zeros(2, dtype=np.dtype("datetime64[s]"))})


class _Scripted(
    prediction_service_pb2_grpc.PredictionServiceServicer,
    model_service_pb2_grpc.ModelServiceServicer,
):
    """Answers from fixed messages; model ``missing`` is NOT_FOUND; records requests."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.deadlines: list[float | None] = []

    def _record(self, request: Any, context: grpc.ServicerContext) -> None:
        self.requests.append(request)
        self.deadlines.append(context.time_remaining())
        if request.model_spec.name == "missing":
            context.abort(
                grpc.StatusCode.NOT_FOUND, "Servable not found for request: Latest(missing)"
            )

    def Predict(
        self, request: predict_pb2.PredictRequest, context: grpc.ServicerContext
    ) -> predict_pb2.PredictResponse:
        self._record(request, context)
        images = tensor_codec.to_ndarray(request.inputs["images"], max_elements=10**6)
        response = predict_pb2.PredictResponse()
        response.model_spec.CopyFrom(request.model_spec)
        label = np.full(images.shape[0], 7, dtype=np.int64)
        response.outputs["label"].CopyFrom(tensor_codec.from_ndarray(label))
        response.outputs["sum"].CopyFrom(tensor_codec.from_ndarray(images.sum(axis=1)))
        return response

    def GetModelMetadata(
        self, request: get_model_metadata_pb2.GetModelMetadataRequest, context: grpc.ServicerContext
    ) -> get_model_metadata_pb2.GetModelMetadataResponse:
        self._record(request, context)
        return _digits_metadata()

    def GetModelStatus(
        self, request: get_model_status_pb2.GetModelStatusRequest, context: grpc.ServicerContext
    ) -> get_model_status_pb2.GetModelStatusResponse:
        self._record(request, context)
        return _status_response()

    def _unscripted(self, request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not scripted")

    Classify = Regress = MultiInference = HandleReloadConfigRequest = _unscripted


@pytest.fixture
def scripted() -> Iterator[tuple[str, _Scripted]]:
    """A scripted server on an OS-chosen port: ``(target, servicer)``."""
    servicer = _Scripted()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=2), options=[("grpc.so_reuseport", 0)]
    )
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(servicer, server)
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        server.stop(None).wait()


IMAGES = np.ones((3, 64), dtype=np.float32)
DEADLINE_SLACK_S = 0.5
"""gRPC rounds a deadline up on the wire (``grpc-timeout`` has 8 digits and a unit)."""
NO_DEADLINE_S = 10**6
"""``time_remaining()`` of a call without a deadline: grpc reports "infinite" as ~292 years."""


def test_client_round_trip(scripted: tuple[str, _Scripted]) -> None:
    target, servicer = scripted
    with Client(target, timeout=30.0) as client:
        outputs = client.predict("digits", {"images": IMAGES}, version=1, timeout=None)
        assert client.metadata("digits", version=1) == DIGITS_METADATA
        assert client.status("digits") == STATUS
    np.testing.assert_array_equal(outputs["label"], [7, 7, 7])
    assert outputs["label"].dtype == np.int64
    np.testing.assert_array_equal(outputs["sum"], [64.0, 64.0, 64.0])
    predict, metadata, status = servicer.requests
    assert predict.model_spec.version.value == 1
    assert predict.inputs["images"].tensor_content == IMAGES.tobytes()
    assert list(metadata.metadata_field) == ["signature_def"]
    assert metadata.model_spec.version.value == 1
    assert status.model_spec.name == "digits" and not status.model_spec.HasField("version")
    no_deadline, *with_deadline = servicer.deadlines
    assert no_deadline is None or no_deadline > NO_DEADLINE_S
    assert all(d is not None and 0 < d <= 30.0 + DEADLINE_SLACK_S for d in with_deadline)


def test_client_lets_rpc_errors_propagate(scripted: tuple[str, _Scripted]) -> None:
    target, _ = scripted
    with Client(target) as client, pytest.raises(grpc.RpcError) as caught:
        client.predict("missing", {"images": IMAGES})
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "Servable not found for request: Latest(missing)"


def test_async_client_round_trip_and_errors(scripted: tuple[str, _Scripted]) -> None:
    target, servicer = scripted

    async def scenario() -> tuple[dict[str, np.ndarray], dict[str, Any], list[dict[str, Any]]]:
        async with AsyncClient(target) as client:
            outputs = await client.predict("digits", {"images": IMAGES}, version_label="stable")
            metadata = await client.metadata("digits")
            status = await client.status("digits", version=2)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await client.status("missing")
            assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(RuntimeError, match="closed"):
            await client.status("digits")
        return outputs, metadata, status

    outputs, metadata, status = asyncio.run(scenario())
    np.testing.assert_array_equal(outputs["label"], [7, 7, 7])
    assert metadata == DIGITS_METADATA
    assert status == STATUS
    assert servicer.requests[0].model_spec.version_label == "stable"
    assert servicer.requests[2].model_spec.version.value == 2
    assert all(d is not None and 0 < d <= 10.0 + DEADLINE_SLACK_S for d in servicer.deadlines)


def test_cli_prints_outputs_as_json(
    scripted: tuple[str, _Scripted], capsys: pytest.CaptureFixture[str]
) -> None:
    target, servicer = scripted
    assert main(["--target", target, "--model", "digits", "--version", "3"]) == 0
    assert json.loads(capsys.readouterr().out) == {"label": [7], "sum": [sum(DIGIT_ZERO)]}
    sent = tensor_codec.to_ndarray(servicer.requests[0].inputs["images"], max_elements=64)
    np.testing.assert_array_equal(sent, [DIGIT_ZERO])
    assert main(["--target", target, "--model", "digits", "--call", "status"]) == 0
    assert json.loads(capsys.readouterr().out) == STATUS
    assert main(["--target", target, "--model", "missing"]) == 1
    assert capsys.readouterr().err == "NOT_FOUND: Servable not found for request: Latest(missing)\n"


def test_cli_image_is_a_zero_for_the_demo_model() -> None:
    outputs = run_reference(DIGITS_MODEL, {"images": np.asarray([DIGIT_ZERO], dtype=np.float32)})
    assert outputs["label"].tolist() == [0]
