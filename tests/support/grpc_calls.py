"""Building PredictRequests and reading PredictResponses with the project's own codec."""

from __future__ import annotations

import queue

import grpc
import numpy as np

from gateway._pb.tensorflow_serving.apis import predict_pb2
from gateway.tfserving.codec import tensor_decode, tensor_encode

MAX = 2**31 - 1
"""Decoding bound for response tensors (tests trust the server under test to be sane)."""


def predict_request(
    model: str, inputs: dict[str, np.ndarray], **spec: object
) -> predict_pb2.PredictRequest:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    if "version" in spec:
        request.model_spec.version.value = int(spec["version"])  # type: ignore[call-overload]
    if "label" in spec:
        request.model_spec.version_label = str(spec["label"])
    if "signature" in spec:
        request.model_spec.signature_name = str(spec["signature"])
    for name, array in inputs.items():
        request.inputs[name].CopyFrom(
            tensor_encode.from_ndarray(array, as_tensor_content=bool(spec.get("content", True)))
        )
    for name in spec.get("output_filter", ()):  # type: ignore[attr-defined]
        request.output_filter.append(name)
    return request


def outputs_of(response: predict_pb2.PredictResponse) -> dict[str, np.ndarray]:
    return {k: tensor_decode.to_ndarray(v, max_elements=MAX) for k, v in response.outputs.items()}


def in_flight_but_the_busy_one(calls: list[grpc.Future]) -> list[grpc.Future]:
    """``calls`` minus the first to end, which must be refused busy (UNAVAILABLE, "busy"): it
    proves the others were in flight past ``--max_concurrent_requests``."""
    done: queue.Queue[grpc.Future] = queue.Queue()
    for call in calls:
        call.add_done_callback(done.put)
    busy = done.get(timeout=60)
    assert busy.code() == grpc.StatusCode.UNAVAILABLE, busy.details()
    assert "busy" in busy.details()
    return [c for c in calls if c is not busy]
