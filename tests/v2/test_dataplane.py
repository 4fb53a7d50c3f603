"""V2's operations over a real serving core (one ONNX worker, model ``m`` versions 1 and 2, which
scale by 1 and 2): readiness, metadata, inference by version and label, statistics, Triton's
not-found texts and dtype mismatches in V2 datatype names."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway._pb.inference.grpc_service_pb2 import ModelInferRequest
from gateway.config.model_config import ModelSpecConfig
from gateway.errors import InvalidArgument, NotFound
from gateway.serving.core import PredictResult
from gateway.serving.inputs import Decoded
from gateway.serving.signature import Signature
from gateway.v2 import grpc_infer
from gateway.v2.dataplane import DataPlane, V2Options
from tests.support import onnx_models
from tests.support.stack import serving_stack


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[DataPlane]:
    """V2's data plane over a real serving stack: ``m`` versions 1 and 2 (label ``one``)."""
    for version in (1, 2):
        onnx_models.scaled(tmp_path / "m" / str(version) / "model.onnx", float(version))
    spec = ModelSpecConfig(
        name="m", base_path=str(tmp_path / "m"), policy="all", num_versions=0, labels={"one": 1}
    )
    async with serving_stack([spec]) as stack:
        yield DataPlane(stack.core, V2Options(max_elements=100))


def _request(version: str = "", datatype: str = "FP32", model: str = "m") -> ModelInferRequest:
    request = ModelInferRequest(model_name=model, model_version=version, id="r1")
    request.inputs.add(name="x", datatype=datatype, shape=[1, 2])
    fmt = "<2d" if datatype == "FP64" else "<2f"
    request.raw_input_contents.append(struct.pack(fmt, 1.5, -2.0))
    return request


async def _infer(plane: DataPlane, request: ModelInferRequest) -> tuple[str, list[float]]:
    def decode(signature: Signature) -> Decoded:
        return grpc_infer.infer_inputs(request, plane.limits)

    def encode(result: PredictResult) -> tuple[str, list[float]]:
        return result.signature_name, [*result.outputs["y"].ravel().tolist(), result.version]

    return await plane.infer(grpc_infer.infer_call(request), decode, encode, None)


async def test_readiness_metadata_and_inference_by_version_and_label(
    tmp_path: Path, plane: DataPlane
) -> None:
    assert plane.ready()
    assert plane.model_ready("m", "") and plane.model_ready("m", "1")
    assert not plane.model_ready("m", "9") and not plane.model_ready("nope", "")
    servable, available = plane.model_metadata("m", "")
    assert (servable.version, available) == (2, [1, 2])
    assert await _infer(plane, _request()) == ("serving_default", [3.0, -4.0, 2])
    assert await _infer(plane, _request("1")) == ("serving_default", [1.5, -2.0, 1])
    assert await _infer(plane, _request("one")) == ("serving_default", [1.5, -2.0, 1])


async def test_errors_in_triton_s_words_and_statistics_per_available_version(
    tmp_path: Path, plane: DataPlane
) -> None:
    with pytest.raises(NotFound, match=r"^Request for unknown model: 'nope' is not found$"):
        await _infer(plane, _request(model="nope"))
    with pytest.raises(NotFound, match="'m' version 9 is not found"):
        plane.model_metadata("m", "9")
    with pytest.raises(InvalidArgument, match="datatype FP64 but the model expects FP32"):
        await _infer(plane, _request(datatype="FP64"))
    assert [(f.name, f.version) for f in plane.statistics("", "")] == [("m", 1), ("m", 2)]
    assert [f.version for f in plane.statistics("m", "one")] == [1]
    with pytest.raises(NotFound, match="'nope' is not found"):
        plane.statistics("nope", "")
