"""A scripted TF Serving for the client's tests: an in-process PredictionService/ModelService on
an OS-chosen port that answers from fixed messages and records what it receives."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc
import numpy as np

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
from gateway.tfserving.codec import tensor_decode, tensor_encode, tensor_types


def _tensor_info(dtype: str, shape: list[int] | None) -> meta_graph_pb2.TensorInfo:
    info = meta_graph_pb2.TensorInfo(name=f"{dtype}:0")
    info.dtype = types_pb2.DataType.ValueType(tensor_types.data_type(dtype))
    if shape is None:
        info.tensor_shape.unknown_rank = True
    for size in shape or ():
        info.tensor_shape.dim.add(size=size)
    return info


def digits_metadata() -> get_model_metadata_pb2.GetModelMetadataResponse:
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


def status_response() -> get_model_status_pb2.GetModelStatusResponse:
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


STRING_OUTPUT = b"\x00\xff"
"""The one value of model ``strings``' output: bytes that are not text."""


class Scripted(
    prediction_service_pb2_grpc.PredictionServiceServicer,
    model_service_pb2_grpc.ModelServiceServicer,
):
    """Answers from fixed messages; model ``missing`` is NOT_FOUND; model ``strings`` answers
    one string output, ``text``; records requests."""

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
        images = tensor_decode.to_ndarray(request.inputs["images"], max_elements=10**6)
        response = predict_pb2.PredictResponse()
        response.model_spec.CopyFrom(request.model_spec)
        if request.model_spec.name == "strings":
            text = np.array([STRING_OUTPUT], dtype=object)
            response.outputs["text"].CopyFrom(tensor_encode.from_ndarray(text))
            return response
        label = np.full(images.shape[0], 7, dtype=np.int64)
        response.outputs["label"].CopyFrom(tensor_encode.from_ndarray(label))
        response.outputs["sum"].CopyFrom(tensor_encode.from_ndarray(images.sum(axis=1)))
        return response

    def GetModelMetadata(
        self, request: get_model_metadata_pb2.GetModelMetadataRequest, context: grpc.ServicerContext
    ) -> get_model_metadata_pb2.GetModelMetadataResponse:
        self._record(request, context)
        return digits_metadata()

    def GetModelStatus(
        self, request: get_model_status_pb2.GetModelStatusRequest, context: grpc.ServicerContext
    ) -> get_model_status_pb2.GetModelStatusResponse:
        self._record(request, context)
        return status_response()

    def _unscripted(self, request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not scripted")

    Classify = Regress = MultiInference = HandleReloadConfigRequest = _unscripted


@contextmanager
def scripted_server() -> Iterator[tuple[str, Scripted]]:
    """A scripted server on an OS-chosen port: ``(target, servicer)``."""
    servicer = Scripted()
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
