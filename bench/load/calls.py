"""What the load generator sends: gRPC method paths, request bytes, ghz-style durations.

Requests are serialized once, before the run; the generator sends the same bytes every time
(as ghz does with ``-B``) so the client's per-request cost is transport only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
from google.protobuf import descriptor_pool, json_format, message_factory

# Importing these registers TF Serving's services in the default descriptor pool.
from gateway._pb.inference import grpc_service_pb2
from gateway._pb.tensorflow_serving.apis import model_service_pb2, prediction_service_pb2
from gateway.client import predict_request

PREDICT_METHOD = "/tensorflow.serving.PredictionService/Predict"
_REGISTERED = (model_service_pb2, prediction_service_pb2, grpc_service_pb2)
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)")
_UNITS_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def method_path(call: str) -> str:
    """ghz's ``--call`` (``pkg.Service.Method`` or ``pkg.Service/Method``) → gRPC path.

    The path is ``/pkg.Service/Method``.

    Raises ValueError for a name without a service part.
    """
    name = call.strip().lstrip("/")
    if "/" in name:
        service, _, method = name.rpartition("/")
    else:
        service, _, method = name.rpartition(".")
    if not service or not method:
        raise ValueError(f"--call must look like package.Service.Method, got {call!r}")
    return f"/{service}/{method}"


def request_from_json(call: str, text: str) -> bytes:
    """Serialize JSON ``text`` (proto3 JSON mapping) as the input message of ``call``.

    Only services whose generated code this process has imported are known (TF Serving's
    PredictionService and ModelService). Raises ValueError for an unknown method or bad JSON.
    """
    service, method = method_path(call)[1:].split("/")
    try:
        service_desc = descriptor_pool.Default().FindServiceByName(service)
    except KeyError:
        raise ValueError(f"unknown service {service!r}; use -B with a binary message") from None
    method_desc = service_desc.methods_by_name.get(method)
    if method_desc is None:
        raise ValueError(f"service {service} has no method {method!r}")
    message = message_factory.GetMessageClass(method_desc.input_type)()
    try:
        json_format.Parse(text, message)
    except json_format.ParseError as exc:
        raise ValueError(
            f"bad request JSON for {method_desc.input_type.full_name}: {exc}"
        ) from None
    return message.SerializeToString()


def predict_payload(
    model: str, inputs: Mapping[str, np.ndarray], signature_name: str = "serving_default"
) -> bytes:
    """A serialized PredictRequest (numeric inputs as ``tensor_content``, as TF clients send)."""
    return predict_request(model, inputs, signature_name=signature_name).SerializeToString()


def parse_duration(text: str) -> float:
    """ghz/Go duration text (``10s``, ``500ms``, ``1m30s``, or plain seconds) → seconds.

    Raises ValueError for anything else or a negative value.
    """
    raw = text.strip()
    try:
        value = float(raw)
    except ValueError:
        pos, value = 0, 0.0
        for match in _DURATION.finditer(raw):
            if match.start() != pos:
                break
            value += float(match.group(1)) * _UNITS_S[match.group(2)]
            pos = match.end()
        if pos != len(raw) or not raw:
            raise ValueError(f"bad duration {text!r} (use e.g. 10s, 500ms, 1m30s)") from None
    if value < 0:
        raise ValueError(f"duration must be >= 0, got {text!r}")
    return value


def v2_infer_payload(model: str, name: str, shape: tuple[int, ...], raw: bytes) -> bytes:
    """A serialized v2 ``ModelInferRequest`` for ``model``: one FP32 input ``name`` of ``shape``
    carried in ``raw_input_contents`` (the V2 peers' request, from tensorgate's own protos)."""
    request = grpc_service_pb2.ModelInferRequest(model_name=model)
    tensor = request.inputs.add()
    tensor.name = name
    tensor.datatype = "FP32"
    tensor.shape.extend(shape)
    request.raw_input_contents.append(raw)
    return request.SerializeToString()
