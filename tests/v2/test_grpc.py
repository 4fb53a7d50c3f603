"""The gRPC adapter over a real serving core: each RPC answers, and every failure — a
ServingError, an unexpected exception, an extension tensorgate lacks — becomes a gRPC status on
the call's context (the one fake: the servicer context, as grpc.aio hands it in)."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import grpc
import pytest

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway.config.model_config import ModelSpecConfig
from gateway.transport.grpc_errors import status_of
from gateway.v2.dataplane import DataPlane, V2Options
from gateway.v2.grpc import GRPCInferenceService
from tests.support import onnx_models
from tests.support.fakes import FakeContext
from tests.support.stack import serving_stack


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Any]:
    """V2's gRPC service over a real serving stack serving ``m`` (its contexts are fakes)."""
    onnx_models.scaled(tmp_path / "m" / "1" / "model.onnx", 2.0)
    spec = ModelSpecConfig(name="m", base_path=str(tmp_path / "m"))
    async with serving_stack([spec]) as stack:
        options = V2Options(max_elements=100, version="9.9")
        yield GRPCInferenceService(DataPlane(stack.core, options))


def _infer_request(model: str = "m") -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name=model, id="r1")
    request.inputs.add(name="x", datatype="FP32", shape=[1, 2])
    request.raw_input_contents.append(struct.pack("<2f", 1.0, 3.0))
    return request


async def _status(call: Awaitable[object], context: FakeContext) -> tuple[grpc.StatusCode, str]:
    """The status the call ends with, by the error rule the gate applies to what it raises."""
    try:
        await call
    except grpc.aio.AbortError:  # the servicer aborted the call itself
        assert context.status is not None
        return context.status
    except Exception as exc:
        return status_of(exc, "/inference.GRPCInferenceService/test")
    raise AssertionError("the call did not fail")


async def test_each_rpc_answers_from_the_data_plane(tmp_path: Path, service: Any) -> None:
    ctx = FakeContext(remaining=60.0)
    assert (await service.ServerLive(pb.ServerLiveRequest(), ctx)).live
    assert (await service.ServerReady(pb.ServerReadyRequest(), ctx)).ready
    ready = await service.ModelReady(pb.ModelReadyRequest(name="m", version="2"), ctx)
    assert not ready.ready
    server = await service.ServerMetadata(pb.ServerMetadataRequest(), ctx)
    assert server.version == "9.9"
    model = await service.ModelMetadata(pb.ModelMetadataRequest(name="m"), ctx)
    assert list(model.versions) == ["1"]
    response = pb.ModelInferResponse.FromString(await service.ModelInfer(_infer_request(), ctx))
    assert (response.model_name, response.model_version, response.id) == ("m", "1", "r1")
    assert struct.unpack("<2f", response.raw_output_contents[0]) == (2.0, 6.0)
    stats = await service.ModelStatistics(pb.ModelStatisticsRequest(name="m"), ctx)
    assert [s.version for s in stats.model_stats] == ["1"]
    index = await service.RepositoryIndex(pb.RepositoryIndexRequest(), ctx)
    assert [(m.name, m.state) for m in index.models] == [("m", "READY")]
    assert ctx.status is None


async def test_failures_become_grpc_statuses_on_the_context(tmp_path: Path, service: Any) -> None:
    ctx = FakeContext()
    call = service.ModelInfer(_infer_request("nope"), ctx)
    assert await _status(call, ctx) == (
        grpc.StatusCode.NOT_FOUND,
        "Request for unknown model: 'nope' is not found",
    )
    ctx = FakeContext()
    named = pb.RepositoryIndexRequest(repository_name="r")
    code, message = await _status(service.RepositoryIndex(named, ctx), ctx)
    assert code == grpc.StatusCode.UNIMPLEMENTED and "'repository_name'" in message
    ctx = FakeContext()
    load = pb.RepositoryModelLoadRequest(model_name="m")
    code, message = await _status(service.RepositoryModelLoad(load, ctx), ctx)
    assert code == grpc.StatusCode.UNAVAILABLE
    assert message.startswith("explicit model load / unload is not allowed")
    ctx = FakeContext(broken=True)
    call = service.ModelInfer(_infer_request(), ctx)
    assert await _status(call, ctx) == (
        grpc.StatusCode.INTERNAL,
        "RuntimeError: context broke",
    )
    ctx = FakeContext()
    code, message = await _status(service.CudaSharedMemoryStatus(None, ctx), ctx)
    assert code == grpc.StatusCode.UNIMPLEMENTED and "CUDA shared-memory" in message
