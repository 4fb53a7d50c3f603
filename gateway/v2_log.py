"""V2 ModelInfer calls as request log records (TF Serving's ``logging_config``): each logged call
is one ``tensorflow.serving.PredictionLog`` with a ``predict_log``, written by
:func:`gateway.tfserving.request_log.predict` as a Predict call's record would be, to the same
files as the model's Predict calls — so a log file stays a valid
``assets.extra/tf_serving_warmup_requests``.

The V2 call as a Predict, read as the servicer reads it (:mod:`gateway.v2.grpc_infer`): the
request's ``model_spec`` names the model, the version (``model_version`` of digits) or label (any
other non-empty ``model_version``; empty: the latest) and the ``signature_name`` parameter (empty:
the default signature), its ``output_filter`` the requested outputs; its inputs
(``raw_input_contents`` or typed ``contents``) become TensorProtos in typed fields
(:func:`gateway.tfserving.codec.tensor_encode.from_ndarray`; BYTES as ``string_val``). The
response's ``model_spec`` names the model, the version that served and that signature parameter;
its outputs (``raw_output_contents``) become TensorProtos likewise. The request's ``id`` and its
other parameters are not kept.

It lives in the composition layer because it reads both protocols' messages (``v2`` and
``tfserving`` import neither the other). Called in the request log's writer thread, never on the
event loop: the response arrives as the servicer's encoded bytes and is parsed only here.
"""

from __future__ import annotations

import sys
from typing import Any

from gateway._pb.inference.grpc_service_pb2 import ModelInferRequest, ModelInferResponse
from gateway._pb.tensorflow_serving.apis import predict_pb2
from gateway.tfserving import request_log
from gateway.tfserving.codec.tensor_encode import from_ndarray
from gateway.transport.surface import LogAs, Sampled
from gateway.v2 import raw
from gateway.v2.declared import Limits, declare
from gateway.v2.grpc_infer import infer_call, infer_inputs

UNBOUNDED = Limits(max_elements=sys.maxsize)
"""A logged call was answered, so its tensors passed the server's bounds already."""


def as_predict(
    request: ModelInferRequest, response: ModelInferResponse
) -> tuple[predict_pb2.PredictRequest, predict_pb2.PredictResponse]:
    """The Predict request and response a successful ModelInfer call stands for."""
    call = infer_call(request)
    signature = call.options.signature_name
    predict = predict_pb2.PredictRequest(output_filter=call.output_filter())
    spec = predict.model_spec
    spec.name, spec.signature_name = call.target.name, signature
    if call.target.version is not None:
        spec.version.value = call.target.version
    elif call.target.label is not None:
        spec.version_label = call.target.label
    for name, array in infer_inputs(request, UNBOUNDED).arrays().items():
        predict.inputs[name].CopyFrom(from_ndarray(array))
    answer = predict_pb2.PredictResponse()
    answer.model_spec.name, answer.model_spec.signature_name = response.model_name, signature
    answer.model_spec.version.value = int(response.model_version)
    for tensor, data in zip(response.outputs, response.raw_output_contents, strict=True):
        declared = declare(tensor.name, tensor.datatype, tensor.shape, UNBOUNDED)
        answer.outputs[tensor.name].CopyFrom(from_ndarray(raw.from_raw(declared, data)))
    return predict, answer


def model_infer(request: ModelInferRequest, response: Any, sampled: Sampled) -> bytes:
    """One framed ``predict_log`` record of a ModelInfer call; ``response``: its
    ``ModelInferResponse`` or that message's encoding (what the servicer answers)."""
    if not isinstance(response, ModelInferResponse):
        response = ModelInferResponse.FromString(bytes(response))
    return request_log.predict(*as_predict(request, response), sampled)


LOG_AS: dict[str, LogAs] = {"ModelInfer": model_infer}
"""GRPCInferenceService's method name → how its calls are logged."""
