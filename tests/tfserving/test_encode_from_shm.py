"""Responses are encoded from the worker's output space, and the space is not reused meanwhile.

A real worker behind the in-process serving stack; the gRPC servicer is called directly, its
response encoder (the one seam) wrapped to look at what it is handed.
"""

from __future__ import annotations

import asyncio
import gc
import mmap
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import predict_pb2
from gateway.config.model_config import ModelSpecConfig
from gateway.serving.core import ModelRef, PredictResult
from gateway.serving.inputs import converted_inputs
from gateway.tfserving import grpc as grpc_adapter
from gateway.tfserving.grpc import PredictionService
from gateway.worker_channel.lease import Outputs
from tests.support import onnx_models
from tests.support.fakes import FakeContext
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.stack import serving_stack

WAIT_S = 60.0


def _shared_memory(array: np.ndarray) -> Any:
    """The object at the end of ``array``'s ``.base`` chain: what owns its memory."""
    base: Any = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base


def _x(value: float) -> np.ndarray:
    return np.full((1, 2), value, np.float32)


@pytest.fixture
def spec(tmp_path: Path) -> ModelSpecConfig:
    onnx_models.scaled(tmp_path / "scaled" / "1" / "model.onnx", 2.0)
    return ModelSpecConfig(name="scaled", base_path=str(tmp_path / "scaled"))


async def _held(stack: Any, value: float) -> Outputs:
    """One run's rows as the batcher hands them to the core: views holding a lease reference
    (the core returns it once its encoder is done; here the test holds it)."""
    servable = stack.models.resolve("scaled")
    queue = stack.queues.get(servable, "serving_default")
    outputs: Outputs = await asyncio.wait_for(queue.submit({"x": _x(value)}, ["y"], None), WAIT_S)
    return outputs


async def test_outputs_are_read_only_views_and_their_space_is_not_reused_while_held(
    spec: ModelSpecConfig,
) -> None:
    async with serving_stack([spec]) as stack:
        (link,) = stack.dispatcher.links
        first = await _held(stack, 1.0)
        y = first["y"]
        owner = _shared_memory(y)
        assert isinstance(owner, memoryview) and isinstance(owner.obj, mmap.mmap)
        assert owner.readonly and not y.flags.writeable
        # The worker's next run must not land on the held range: it goes past it.
        second = await _held(stack, 5.0)
        assert not np.shares_memory(y, second["y"])
        np.testing.assert_array_equal(y, _x(2.0))  # untouched by the second run
        assert link.channel.outputs_held == 2
        second.release()
        first.release()
        assert link.channel.outputs_held == 0 and link.channel.output_used == 0


async def test_the_core_returns_the_space_when_the_encoder_fails(spec: ModelSpecConfig) -> None:
    """The core owns the lease: whatever the protocol's encoder does, the worker gets its
    output space back as the call ends."""

    def broken(result: PredictResult) -> None:
        assert not result.outputs["y"].flags.writeable
        raise ValueError("the encoder failed")

    async with serving_stack([spec]) as stack:
        (link,) = stack.dispatcher.links
        decode = lambda _signature: converted_inputs({"x": _x(1.0)})  # noqa: E731
        with pytest.raises(ValueError, match="the encoder failed"):
            await asyncio.wait_for(
                stack.core.predict(ModelRef("scaled"), "", decode, broken), WAIT_S
            )
        assert link.channel.outputs_held == 0 and link.channel.output_used == 0
        copied = await asyncio.wait_for(
            stack.core.predict(ModelRef("scaled"), "", decode, _copies), WAIT_S
        )
        np.testing.assert_array_equal(copied["y"], _x(2.0))
        assert link.channel.outputs_held == 0 and link.channel.output_used == 0


def _copies(result: PredictResult) -> dict[str, np.ndarray]:
    return {name: array.copy() for name, array in result.outputs.items()}


async def test_the_grpc_encoder_reads_shared_memory_and_the_lease_ends_with_the_call(
    spec: ModelSpecConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    views: list[weakref.ref[np.ndarray]] = []
    encode = grpc_adapter.encoded_response
    holder: dict[str, Any] = {}

    def spy(result: PredictResult, **kwargs: Any) -> Any:
        y = result.outputs["y"]
        seen.append(
            {
                "owner": type(_shared_memory(y)),
                "writeable": y.flags.writeable,
                "held": holder["channel"].outputs_held,
            }
        )
        views.append(weakref.ref(y))
        return encode(result, **kwargs)

    monkeypatch.setattr(grpc_adapter, "encoded_response", spy)

    async with serving_stack([spec]) as stack:
        (link,) = stack.dispatcher.links
        holder["channel"] = link.channel
        service = PredictionService(stack.core, max_elements=1 << 20, as_tensor_content=True)
        request = predict_request("scaled", {"x": _x(3.0)})
        for _ in range(3):
            response = await asyncio.wait_for(
                service.Predict(request, FakeContext()),
                WAIT_S,
            )
            assert isinstance(response, bytes)  # encoded here, passed through by the gate
            decoded = predict_pb2.PredictResponse.FromString(response)
            np.testing.assert_array_equal(outputs_of(decoded)["y"], _x(6.0))
        assert link.channel.outputs_held == 0 and link.channel.output_used == 0
    assert seen == [{"owner": memoryview, "writeable": False, "held": 1}] * 3
    gc.collect()
    assert all(view() is None for view in views)  # no view outlives its call
