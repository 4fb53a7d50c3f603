"""Predict / GetModelMetadata / GetModelStatus / health / reflection over real gRPC."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from gateway._pb.tensorflow.core.protobuf import meta_graph_pb2
from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)
from gateway.client import AsyncClient, Client
from gateway.tfserving.codec import tensor_types
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.onnx_models import IDENTITY_DTYPES
from tests.support.ort import run_reference


@pytest.fixture
def channel(gateway: GatewayProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(gateway.target) as ch:
        yield ch


def test_predict_equals_onnx_runtime_exactly(channel: grpc.Channel, model_repo: Path) -> None:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    x = np.random.default_rng(5).standard_normal((7, 64)).astype(np.float32)
    response = stub.Predict(predict_request("mlp", {"x": x}), timeout=30)
    expected = run_reference(model_repo / "mlp" / "2" / "model.onnx", {"x": x})
    got = outputs_of(response)
    assert set(got) == {"logits", "probs"}
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value)
        assert got[name].dtype == np.float32
    assert response.model_spec.name == "mlp"
    assert response.model_spec.version.value == 2
    assert response.model_spec.signature_name == "serving_default"
    # TF Serving's default response encoding: typed fields, not tensor_content.
    assert len(response.outputs["probs"].float_val) == 70
    assert response.outputs["probs"].tensor_content == b""


@pytest.mark.parametrize(
    ("spec", "version"),
    [
        ({"version": 1}, 1),
        ({"version": 2}, 2),
        ({"label": "stable"}, 1),
        ({"label": "canary"}, 2),
        ({}, 2),
    ],
)
def test_versions_and_labels(
    channel: grpc.Channel, model_repo: Path, spec: dict[str, object], version: int
) -> None:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    x = np.ones((2, 64), np.float32)
    response = stub.Predict(predict_request("mlp", {"x": x}, **spec), timeout=30)
    expected = run_reference(model_repo / "mlp" / str(version) / "model.onnx", {"x": x})
    assert response.model_spec.version.value == version
    np.testing.assert_array_equal(outputs_of(response)["logits"], expected["logits"])


def _sample(dtype: str, rng: np.random.Generator) -> np.ndarray:
    if dtype == "string":
        return np.array([[b"a", b"\xc3\xa9t\xc3\xa9"], [b"", b"long " * 20]], dtype=object)
    if dtype == "bool":
        return rng.integers(0, 2, (2, 3)).astype(bool)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return np.array([[info.min, 0, info.max], [1, 2, 3]], dtype=dtype)
    return np.array([[np.nan, np.inf, -np.inf], [0.5, -0.0, 1e-3]], dtype=dtype)


@pytest.mark.parametrize("dtype", sorted(IDENTITY_DTYPES))
@pytest.mark.parametrize("content", [True, False])
def test_every_dtype_round_trips_through_workers(
    channel: grpc.Channel, dtype: str, content: bool
) -> None:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    rng = np.random.default_rng(1)
    inputs = {f"in_{d}": _sample(d, rng) for d in IDENTITY_DTYPES}
    request = predict_request("identities", inputs, content=content, output_filter=[f"out_{dtype}"])
    got = outputs_of(stub.Predict(request, timeout=30))
    assert list(got) == [f"out_{dtype}"]
    sent = inputs[f"in_{dtype}"]
    out = got[f"out_{dtype}"]
    assert out.shape == sent.shape
    if dtype == "string":
        assert out.tolist() == sent.tolist()
    else:
        assert out.dtype == sent.dtype
        assert out.tobytes() == sent.tobytes()


def test_two_inputs_and_output_filter(channel: grpc.Channel) -> None:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, np.float32)
    got = outputs_of(stub.Predict(predict_request("add_two", {"a": a, "b": b}), timeout=30))
    np.testing.assert_array_equal(got["sum"], a + b)
    np.testing.assert_array_equal(got["diff"], a - b)
    only = outputs_of(
        stub.Predict(
            predict_request("add_two", {"a": a, "b": b}, output_filter=["diff"]), timeout=30
        )
    )
    assert list(only) == ["diff"]


def test_metadata_signature_def(channel: grpc.Channel) -> None:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = "mlp"
    response = stub.GetModelMetadata(request, timeout=30)
    assert response.model_spec.name == "mlp"
    assert response.model_spec.version.value == 2
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    assert response.metadata["signature_def"].Unpack(signature_map)
    signature = signature_map.signature_def["serving_default"]
    assert signature.method_name == "tensorflow/serving/predict"
    x: meta_graph_pb2.TensorInfo = signature.inputs["x"]
    assert x.dtype == tensor_types.data_type("float32")
    assert [d.size for d in x.tensor_shape.dim] == [-1, 64]
    assert sorted(signature.outputs) == ["logits", "probs"]
    assert [d.size for d in signature.outputs["probs"].tensor_shape.dim] == [-1, 10]


def test_model_status(channel: grpc.Channel) -> None:
    stub = model_service_pb2_grpc.ModelServiceStub(channel)
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "mlp"
    response = stub.GetModelStatus(request, timeout=30)
    states = [(s.version, s.state, s.status.error_code) for s in response.model_version_status]
    available = get_model_status_pb2.ModelVersionStatus.AVAILABLE
    assert states == [(1, available, 0), (2, available, 0)]
    request.model_spec.version.value = 1
    response = stub.GetModelStatus(request, timeout=30)
    assert [s.version for s in response.model_version_status] == [1]


def test_health_per_model(channel: grpc.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    serving = health_pb2.HealthCheckResponse.SERVING
    for service in ("", "mlp", "identities", "add_two"):
        assert (
            stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=30).status == serving
        )
    with pytest.raises(grpc.RpcError) as info:
        stub.Check(health_pb2.HealthCheckRequest(service="nope"), timeout=30)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_lists_services(channel: grpc.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    (response,) = list(stub.ServerReflectionInfo(iter([request]), timeout=30))
    names = {s.name for s in response.list_services_response.service}
    assert {"tensorflow.serving.PredictionService", "tensorflow.serving.ModelService"} <= names
    assert "grpc.health.v1.Health" in names


def test_reload_is_refused_without_the_management_flag(channel: grpc.Channel) -> None:
    stub = model_service_pb2_grpc.ModelServiceStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.HandleReloadConfigRequest(model_management_pb2.ReloadConfigRequest(), timeout=30)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "--enable_model_management_api" in str(info.value.details())


async def test_package_client_sync_and_async(gateway: GatewayProcess, model_repo: Path) -> None:
    x = np.random.default_rng(9).standard_normal((3, 64)).astype(np.float32)
    expected = run_reference(model_repo / "mlp" / "1" / "model.onnx", {"x": x})
    with Client(gateway.target) as client:
        got = client.predict("mlp", {"x": x}, version=1)
        meta = client.metadata("mlp")
        status = client.status("mlp")
    np.testing.assert_array_equal(got["probs"], expected["probs"])
    assert meta["signature_def"]["serving_default"]["inputs"]["x"]["shape"] == [-1, 64]
    assert [s["state"] for s in status] == ["AVAILABLE", "AVAILABLE"]

    async with AsyncClient(gateway.target) as async_client:
        got = await async_client.predict("mlp", {"x": x}, version_label="stable")
    np.testing.assert_array_equal(got["logits"], expected["logits"])


def test_unix_socket(model_repo: Path, tmp_path: Path) -> None:
    socket_path = tmp_path / "tg.sock"
    args = [
        "--model_name=add_two",
        f"--model_base_path={model_repo / 'add_two'}",
        f"--grpc_socket_path={socket_path}",
        "--workers=1",
    ]
    with running_gateway(args, tmp_path), grpc.insecure_channel(f"unix:{socket_path}") as ch:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        a = np.ones((1, 3), np.float32)
        got = outputs_of(stub.Predict(predict_request("add_two", {"a": a, "b": a}), timeout=30))
        np.testing.assert_array_equal(got["sum"], a * 2)
    assert not socket_path.exists()
