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

from gateway.config.model_config import ModelSpecConfig
from gateway.serving.core import ModelRef, PredictResult
from gateway.tfserving import grpc as grpc_adapter
from gateway.tfserving.grpc import PredictionService
from tests.support import onnx_models
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.stack import serving_stack

WAIT_S = 60.0


class _Context:
    """The one thing the servicer asks of a grpc.aio context on success: no deadline."""

    def time_remaining(self) -> float | None:
        return None


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


async def _predict(core: Any, value: float) -> PredictResult:
    result: PredictResult = await asyncio.wait_for(
        core.predict(ModelRef("scaled"), "", lambda _signature: {"x": _x(value)}), WAIT_S
    )
    return result


def test_outputs_are_read_only_views_and_their_space_is_not_reused_while_held(
    spec: ModelSpecConfig,
) -> None:
    async def scenario() -> None:
        async with serving_stack([spec]) as stack:
            (link,) = stack.pool.dispatcher.links
            first = await _predict(stack.core, 1.0)
            y = first.outputs["y"]
            owner = _shared_memory(y)
            assert isinstance(owner, memoryview) and isinstance(owner.obj, mmap.mmap)
            assert owner.readonly and not y.flags.writeable
            # The worker's next run must not land on the held range: it goes past it.
            second = await _predict(stack.core, 5.0)
            assert not np.shares_memory(y, second.outputs["y"])
            np.testing.assert_array_equal(y, _x(2.0))  # untouched by the second run
            assert link.channel.outputs_held == 2
            second.release()
            first.release()
            assert link.channel.outputs_held == 0 and link.channel.output_used == 0

    asyncio.run(scenario())


def test_the_grpc_encoder_reads_shared_memory_and_the_lease_ends_with_the_call(
    spec: ModelSpecConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    views: list[weakref.ref[np.ndarray]] = []
    encode = grpc_adapter.messages.predict_response
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

    monkeypatch.setattr(grpc_adapter.messages, "predict_response", spy)

    async def scenario() -> None:
        async with serving_stack([spec]) as stack:
            (link,) = stack.pool.dispatcher.links
            holder["channel"] = link.channel
            service = PredictionService(stack.core, max_elements=1 << 20, as_tensor_content=True)
            request = predict_request("scaled", {"x": _x(3.0)})
            for _ in range(3):
                response = await asyncio.wait_for(
                    service.Predict(request, _Context()),  # type: ignore[arg-type]
                    WAIT_S,
                )
                np.testing.assert_array_equal(outputs_of(response)["y"], _x(6.0))
            assert link.channel.outputs_held == 0 and link.channel.output_used == 0

    asyncio.run(scenario())
    assert seen == [{"owner": memoryview, "writeable": False, "held": 1}] * 3
    gc.collect()
    assert all(view() is None for view in views)  # no view outlives its call
