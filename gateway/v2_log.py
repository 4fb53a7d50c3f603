"""V2 inference calls as request log records (TF Serving's ``logging_config``): each logged call
is one ``tensorflow.serving.PredictionLog`` with a ``predict_log``, written as a Predict call's
record would be (:func:`gateway.tfserving.prediction_log.tensors`), to the same files as the model's
Predict calls — so a log file stays a valid ``assets.extra/tf_serving_warmup_requests``.

A V2 call as a Predict, read as the servicer reads it (:mod:`gateway.v2.grpc_infer`): the
request's ``model_spec`` names the model, the version (``model_version`` of digits) or label (any
other non-empty ``model_version``; empty: the latest) and the ``signature_name`` parameter (empty:
the default signature), its ``output_filter`` the requested outputs; its inputs
(``raw_input_contents`` or typed ``contents``) become TensorProtos in typed fields (BYTES as
``string_val``). The response's ``model_spec`` names the model, the version that served and that
signature parameter; its outputs (``raw_output_contents``) become TensorProtos likewise. The
request's ``id`` and its other parameters are not kept. A REST infer
(:data:`REST_INFER`) is logged from the same values, as the V2 REST routes decoded them.

It lives in the composition layer because it reads both protocols' messages (``v2`` and
``tfserving`` import neither the other). Records are made in the request log's writer thread,
never on the event loop: the gRPC response arrives as the servicer's encoded bytes and is parsed
only there; on the loop only the bytes a queued call holds are estimated
(:func:`model_infer_nbytes`).
"""

from __future__ import annotations

import sys
from typing import Any

from gateway._pb.inference.grpc_service_pb2 import (
    InferTensorContents,
    ModelInferRequest,
    ModelInferResponse,
)
from gateway._pb.tensorflow_serving.apis import predict_pb2
from gateway.observability.request_log import TensorRequest
from gateway.serving.core import ModelRef, PredictResult
from gateway.tfserving import prediction_log
from gateway.transport.surface import LogAs, LogRecord, Sampled
from gateway.v2 import raw
from gateway.v2.declared import Limits, declare_input
from gateway.v2.grpc_infer import infer_call, infer_inputs

UNBOUNDED = Limits(max_elements=sys.maxsize)
"""A logged call was answered, so its tensors passed the server's bounds already."""

WIDE_CONTENTS = ("int64_contents", "uint64_contents", "fp64_contents")
"""InferTensorContents' fields of 8-byte values (the others hold 4 or fewer per value)."""
NARROW_CONTENTS = ("bool_contents", "int_contents", "uint_contents", "fp32_contents")


def infer_as_predict(
    request: ModelInferRequest, response: ModelInferResponse
) -> tuple[predict_pb2.PredictRequest, predict_pb2.PredictResponse]:
    """The Predict request and response a successful ModelInfer call stands for."""
    call = infer_call(request)
    target = call.target
    asked = TensorRequest(
        ModelRef(target.name, target.version, target.label),
        call.options.signature_name,
        infer_inputs(request, UNBOUNDED).arrays(),
        tuple(call.output_filter()),
    )
    outputs = {
        tensor.name: raw.from_raw(
            declare_input(tensor.name, tensor.datatype, tensor.shape, UNBOUNDED), data
        )
        for tensor, data in zip(response.outputs, response.raw_output_contents, strict=True)
    }
    served = PredictResult(
        response.model_name, int(response.model_version), call.options.signature_name, outputs
    )
    return prediction_log.as_predict(asked, served)


def model_infer(request: ModelInferRequest, response: Any, sampled: Sampled) -> bytes:
    """One framed ``predict_log`` record of a ModelInfer call; ``response``: its
    ``ModelInferResponse`` or that message's encoding (what the servicer answers)."""
    if not isinstance(response, ModelInferResponse):
        response = ModelInferResponse.FromString(bytes(response))
    return prediction_log.predict_record(*infer_as_predict(request, response), sampled)


def _contents_nbytes(contents: InferTensorContents) -> int:
    total = sum(8 * len(getattr(contents, name)) for name in WIDE_CONTENTS)
    total += sum(4 * len(getattr(contents, name)) for name in NARROW_CONTENTS)
    strings = contents.bytes_contents
    return total + sum(map(len, strings)) + prediction_log.ITEM_BYTES * len(strings)


def model_infer_nbytes(request: ModelInferRequest, response: Any) -> int:
    """About the bytes a ModelInfer's request tensors and its answer (wire bytes) hold."""
    asked = sum(map(len, request.raw_input_contents))
    asked += sum(_contents_nbytes(t.contents) for t in request.inputs)
    if isinstance(response, bytes | bytearray | memoryview):
        return asked + len(response)
    return asked + sum(map(len, response.raw_output_contents))


LOG_AS: dict[str, LogAs] = {"ModelInfer": LogAs(model_infer, model_infer_nbytes)}
"""GRPCInferenceService's method name → how its calls are logged."""

REST_INFER: LogRecord = prediction_log.tensors
"""How a V2 REST infer is logged (request: a
:class:`~gateway.observability.request_log.TensorRequest`, response: a
:class:`~gateway.serving.core.PredictResult` of owned outputs), as its gRPC twin ModelInfer."""
