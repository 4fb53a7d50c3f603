"""TF Serving's gRPC adapters on a real grpc.aio server (port 0), registered as the surface
registers them, in front of a real serving stack (one ONNX worker): each method converts in,
awaits the core and converts out; failures become their gRPC status."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow.core.example import example_pb2
from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
    regression_pb2,
)
from gateway.config.model_config import ModelSpecConfig
from gateway.serving.core import ServingCore
from gateway.tfserving.grpc import ModelService, deadline_of
from gateway.tfserving.surface import TfServingOptions, TfServingSurface
from gateway.transport.gate import Gate
from gateway.transport.grpc_services import register
from gateway.transport.surface import GrpcService
from tests.support import onnx_models
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.stack import serving_stack


def _specs(root: Path) -> list[ModelSpecConfig]:
    onnx_models.scaled(root / "scaled" / "1" / "model.onnx", 2.0)
    onnx_models.onnx_examples(root / "examples" / "1" / "model.onnx")
    return [
        ModelSpecConfig(name=name, base_path=str(root / name)) for name in ("scaled", "examples")
    ]


@asynccontextmanager
async def served(root: Path, **options: Any) -> AsyncIterator[tuple[grpc.aio.Channel, ServingCore]]:
    """A channel to TF Serving's gRPC services over a fresh stack, and the stack's core."""
    async with serving_stack(_specs(root)) as stack:
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        settings = TfServingOptions(max_elements=2**20, max_request_bytes=2**30, **options)
        register(server, TfServingSurface(stack.core, settings).grpc_services(), Gate(), None)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                yield channel, stack.core
        finally:
            await server.stop(None)


def _example(x: float, n: int) -> example_pb2.Example:
    example = example_pb2.Example()
    example.features.feature["x"].float_list.value.append(x)
    example.features.feature["n"].int64_list.value.append(n)
    return example


async def test_each_method_converts_in_awaits_the_core_and_converts_out(tmp_path: Path) -> None:
    async with served(tmp_path) as (channel, _core):
        prediction = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        x = np.array([[1.0, 2.5]], np.float32)
        response = await prediction.Predict(predict_request("scaled", {"x": x}), timeout=30)
        assert response.model_spec.name == "scaled" and response.model_spec.version.value == 1
        (out,) = outputs_of(response).values()
        np.testing.assert_array_equal(out, 2 * x)
        assert not response.outputs[next(iter(response.outputs))].tensor_content  # typed fields
        metadata = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
        metadata.model_spec.name = "scaled"
        answer = await prediction.GetModelMetadata(metadata, timeout=30)
        assert "signature_def" in answer.metadata
        regress = regression_pb2.RegressionRequest()
        regress.model_spec.name = "examples"
        regress.input.example_list.examples.extend([_example(2.0, 1), _example(4.0, 0)])
        regressions = await prediction.Regress(regress, timeout=30)
        assert [r.value for r in regressions.result.regressions] == [4.0, 4.0]
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        status = get_model_status_pb2.GetModelStatusRequest()
        status.model_spec.name = "scaled"
        (version,) = (await models.GetModelStatus(status, timeout=30)).model_version_status
        assert (version.version, version.state) == (1, version.AVAILABLE)


async def test_tensor_content_when_asked(tmp_path: Path) -> None:
    async with served(tmp_path, as_tensor_content=True) as (channel, _core):
        prediction = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        x = np.array([[1.0, 2.5]], np.float32)
        response = await prediction.Predict(predict_request("scaled", {"x": x}), timeout=30)
        (tensor,) = response.outputs.values()
        assert np.frombuffer(tensor.tensor_content, np.float32).tolist() == [2.0, 5.0]


async def test_failures_become_their_grpc_status(tmp_path: Path) -> None:
    async with served(tmp_path) as (channel, _core):
        prediction = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        x = np.ones((1, 2), np.float32)
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await prediction.Predict(predict_request("nope", {"x": x}), timeout=30)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        assert missing.value.details() == "Servable not found for request: Latest(nope)"
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as disabled:
            await models.HandleReloadConfigRequest(
                model_management_pb2.ReloadConfigRequest(), timeout=30
            )
        assert disabled.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert "--enable_model_management_api" in (disabled.value.details() or "")


SERVICE_NAME = "tensorflow.serving.ModelService"


class _Broken(ModelService):
    """A ModelService whose GetModelStatus fails unexpectedly, noting the call's deadline."""

    deadlines: list[float | None] = []

    async def GetModelStatus(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.deadlines.append(deadline_of(context))
        raise RuntimeError("boom")


async def test_unexpected_failures_are_internal_and_the_deadline_is_the_client_s(
    tmp_path: Path,
) -> None:
    async with served(tmp_path) as (_channel, core):
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        service = GrpcService(SERVICE_NAME, "tfserving", _Broken(core).handlers())
        register(server, [service], Gate(), None)  # through the gate, as the server does
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as broken:
                stub = model_service_pb2_grpc.ModelServiceStub(broken)
                before = time.monotonic()
                for timeout in (30.0, None):
                    with pytest.raises(grpc.aio.AioRpcError) as failed:
                        await stub.GetModelStatus(
                            get_model_status_pb2.GetModelStatusRequest(), timeout=timeout
                        )
                    assert failed.value.code() == grpc.StatusCode.INTERNAL
                    assert failed.value.details() == "RuntimeError: boom"
        finally:
            await server.stop(None)
        first, second = _Broken.deadlines
        assert first is not None and first - before == pytest.approx(30.0, abs=1.0)
        assert second is None
