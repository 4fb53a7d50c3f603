"""The transport-agnostic core: lookup before decoding, validation before queueing, results.

Models come from a fake pool and runs go to fake worker links: the two seams of the serving stack.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import numpy as np
import pytest

from gateway.batching.policy import BatchingPolicy
from gateway.config.batching_options import BatchingOptions
from gateway.config.model_config import ModelSpecConfig
from gateway.errors import InvalidArgument, NotFound, ResourceExhausted
from gateway.roles import Options, build
from gateway.serving.core import ModelRef, PredictResult, ServingCore
from gateway.serving.inputs import ConvertedInputs, Decoded, Header
from gateway.serving.signature import Signature
from gateway.worker_pool.pool import PoolOptions
from tests.support.fakes import FakeLink, FakePool, fake_dispatcher
from tests.support.idle_loop import settle

X = np.ones((2, 4), np.float32)


def arrays(**inputs: np.ndarray) -> Callable[[Signature], Decoded]:
    """A decoder of ready arrays."""
    return lambda _signature: ConvertedInputs(dict(inputs))


def owned(result: PredictResult) -> PredictResult:
    """An encoder keeping copies of the outputs (the views are readable only while it runs)."""
    outputs = {name: array.copy() for name, array in result.outputs.items()}
    return PredictResult(result.model, result.version, result.signature_name, outputs)


async def core_with_link(
    tmp_path: Path, inflight_bytes: int | None = None
) -> tuple[ServingCore, list[FakeLink]]:
    """The core as the gateway builds it, over a fake pool and one fake worker link."""
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "model.onnx").write_bytes(b"onnx")
    options = Options(
        pool=PoolOptions(workers=1, input_bytes=0, output_bytes=0),
        batching=BatchingPolicy(BatchingOptions.unbatched(), 1),
        inflight_bytes=inflight_bytes,
    )
    dispatcher, links = fake_dispatcher()
    specs = [ModelSpecConfig("m", str(tmp_path))]
    stack = build(options, specs, workers=FakePool(), dispatcher=dispatcher)
    await stack.models.reconcile()
    return stack.core, links


async def test_an_unknown_model_is_not_found_before_its_tensors_are_decoded(tmp_path: Path) -> None:
    decoded: list[Signature] = []

    def decode(signature: Signature) -> Decoded:
        decoded.append(signature)
        raise InvalidArgument("garbage tensors")

    core, _ = await core_with_link(tmp_path)
    with pytest.raises(NotFound):
        await core.predict(ModelRef("nope"), "", decode, owned)
    assert decoded == []
    with pytest.raises(InvalidArgument, match="garbage tensors"):
        await core.predict(ModelRef("m"), "", decode, owned)
    assert [s.name for s in decoded] == ["serving_default"]


async def test_invalid_inputs_never_reach_a_worker(tmp_path: Path) -> None:
    core, links = await core_with_link(tmp_path)
    with pytest.raises(InvalidArgument, match="dtype float64"):
        await core.predict(ModelRef("m"), "", arrays(x=X.astype(np.float64)), owned)
    with pytest.raises(InvalidArgument, match="alias not found"):
        await core.predict(ModelRef("m"), "", arrays(x=X), owned, ["nope"])
    assert links[0].sent == []


async def test_a_request_runs_on_a_worker_and_gets_its_outputs(tmp_path: Path) -> None:
    core, links = await core_with_link(tmp_path)
    call = asyncio.create_task(core.predict(ModelRef("m"), "", arrays(x=X), owned, ["y"]))
    await settle()
    (sent,) = links[0].sent
    np.testing.assert_array_equal(sent.inputs["x"], X)
    assert sent.outputs == ["y"]
    links[0].complete(0, lambda inputs: {"y": inputs["x"][:, :2] * 2})
    result = await call
    assert (result.model, result.version, result.signature_name) == ("m", 1, "serving_default")
    np.testing.assert_array_equal(result.outputs["y"], X[:, :2] * 2)
    assert list(result.outputs) == ["y"]
    assert core.ready()


async def test_status_by_label_and_metadata(tmp_path: Path) -> None:
    core, _ = await core_with_link(tmp_path)
    servable, signatures = core.metadata(ModelRef("m"))
    assert servable.version == 1 and list(signatures) == ["serving_default"]
    assert [s.version for s in core.status("m")] == [1]
    with pytest.raises(InvalidArgument, match="Unrecognized servable version label"):
        core.status("m", label="nope")


async def test_in_flight_requests_hold_their_decoded_bytes_until_they_complete(
    tmp_path: Path,
) -> None:
    """``--max_inflight_bytes``: past the bound a request is RESOURCE_EXHAUSTED at once (it is
    never queued); the bytes come back when a held request completes, or fails."""

    core, links = await core_with_link(tmp_path, inflight_bytes=X.nbytes * 3 // 2)
    first = asyncio.create_task(core.predict(ModelRef("m"), "", arrays(x=X), owned))
    await settle()
    with pytest.raises(ResourceExhausted, match="pass the limit of 48 bytes"):
        await core.predict(ModelRef("m"), "", arrays(x=X), owned)
    assert len(links[0].sent) == 1
    links[0].fail(0, InvalidArgument("the model refused it"))
    with pytest.raises(InvalidArgument):
        await first
    second = asyncio.create_task(core.predict(ModelRef("m"), "", arrays(x=X), owned))
    await settle()
    links[0].complete(1, lambda inputs: {"y": inputs["x"]})
    assert (await second).outputs["y"].shape == X.shape
    assert core.budget is not None and core.budget.held_bytes == 0


class _Declared:
    """A codec's view of one request: headers that declare ``shape``; counts its conversions."""

    def __init__(self, shape: tuple[int, ...], names: Collection[str] = ("x",)) -> None:
        self._shape = shape
        self._names = names
        self.converted = 0

    @property
    def names(self) -> Collection[str]:
        return self._names

    def headers(self) -> Iterator[Header]:
        for name in self._names:
            yield name, "float32", self._shape

    def arrays(self) -> dict[str, np.ndarray]:
        self.converted += 1
        return {name: np.ones(self._shape, np.float32) for name in self._names}

    def fast_arrays(self, expected: object) -> None:
        return None  # never read straight from the wire: the one validation runs


async def test_inputs_are_validated_once_from_what_they_declare_before_any_is_converted(
    tmp_path: Path,
) -> None:
    core, links = await core_with_link(tmp_path)
    wrong_rank, wrong_name = _Declared((2,)), _Declared((2, 4), names=("z",))
    with pytest.raises(InvalidArgument, match="has shape"):
        await core.predict(ModelRef("m"), "", lambda _s: wrong_rank, owned)
    with pytest.raises(InvalidArgument, match="input size does not match signature"):
        await core.predict(ModelRef("m"), "", lambda _s: wrong_name, owned)
    assert wrong_rank.converted == wrong_name.converted == 0 and links[0].sent == []
    good = _Declared((2, 4))
    call = asyncio.create_task(core.predict(ModelRef("m"), "", lambda _s: good, owned))
    await settle()
    links[0].complete(0, lambda inputs: {"y": inputs["x"][:, :2]})
    assert (await call).outputs["y"].shape == (2, 2)
    assert good.converted == 1
