"""Calls the model-lifecycle tests make: configs as text, reloads, predictions, statuses."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from google.protobuf import text_format

from gateway._pb.tensorflow_serving.apis import (
    get_model_status_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)
from tests.support.grpc_calls import outputs_of, predict_request

WAIT_S = 120.0
X = np.ones((1, 2), np.float32)
"""The input every ``scaled`` model gets (x float32[-1, 2])."""


def config_text(*models: str) -> str:
    """A ModelServerConfig of ``name:base_path[:specific version]`` entries."""
    entries = []
    for model in models:
        name, base, *version = model.split(":")
        policy = (
            f" model_version_policy {{ specific {{ versions: {version[0]} }} }}" if version else ""
        )
        entries.append(f'config {{ name: "{name}" base_path: "{base}"{policy} }}')
    return "model_config_list {\n  " + "\n  ".join(entries) + "\n}\n"


def reload_request(text: str) -> model_management_pb2.ReloadConfigRequest:
    request = model_management_pb2.ReloadConfigRequest()
    text_format.Parse(text, request.config)
    return request


def predict(channel: grpc.Channel, model: str) -> tuple[int, np.ndarray]:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    response = stub.Predict(predict_request(model, {"x": X}), timeout=WAIT_S)
    return response.model_spec.version.value, outputs_of(response)["y"]


def status(channel: grpc.Channel, model: str) -> list[tuple[int, int, str]]:
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = model
    stub = model_service_pb2_grpc.ModelServiceStub(channel)
    response = stub.GetModelStatus(request, timeout=WAIT_S)
    return [(s.version, s.state, s.status.error_message) for s in response.model_version_status]


def reload(
    channel: grpc.Channel, text: str, *metrics: str
) -> model_management_pb2.ReloadConfigResponse:
    request = reload_request(text)
    request.metric_names.extend(metrics)
    stub = model_service_pb2_grpc.ModelServiceStub(channel)
    return stub.HandleReloadConfigRequest(request, timeout=WAIT_S)


def reload_error(channel: grpc.Channel, text: str) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        reload(channel, text)
    return info.value.code(), str(info.value.details())
