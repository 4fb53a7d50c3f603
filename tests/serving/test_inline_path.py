"""The short path of a version placed in the front end, over a real ONNX Runtime session: the
compiled check, a call run alone (batching off), the calls of one loop turn run as one batch
(batching on), cut at the measured rows, and what leaves before the run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from gateway.config.batching_options import BatchingOptions
from gateway.errors import DeadlineExceeded
from gateway.runs.inline_session import InlineSession, load_session
from gateway.runs.inline_watch import InlineWatch
from gateway.serving.inline_path import InlinePlan
from gateway.serving.signature import Signature
from tests.support import onnx_models
from tests.support.idle_loop import settle
from workers.backends import onnx as onnx_backend


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """y = 3x, x of shape [-1, 2]."""
    return onnx_models.scaled(tmp_path_factory.mktemp("inline-path") / "model.onnx", 3.0)


@pytest.fixture
def watch() -> Iterator[InlineWatch]:
    watch = InlineWatch()
    yield watch
    watch.close()


class Counting(InlineSession):
    """The session, with the rows of each run it made."""

    def __init__(self, path: Path, watch: InlineWatch) -> None:
        super().__init__("m:1", load_session(str(path)), watch, max_output_bytes=2**20)
        self.max_rows = 4
        self.batches: list[int] = []

    def run(self, inputs: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray] | None:
        self.batches.append(len(inputs["x"]))
        return super().run(inputs, names)


def _plan(model: Path, watch: InlineWatch, options: BatchingOptions) -> tuple[InlinePlan, Counting]:
    wire = onnx_backend.load(str(model), intra_op=1, inter_op=1).signature
    session = Counting(model, watch)
    plan = InlinePlan(session, Signature.from_wire("serving_default", wire), options, None)
    return plan, session


def _rows(*values: float) -> dict[str, np.ndarray]:
    return {"x": np.array([[v, v] for v in values], np.float32)}


def test_the_compiled_check_takes_exactly_the_signature_s_inputs(
    model: Path, watch: InlineWatch
) -> None:
    plan, _ = _plan(model, watch, BatchingOptions.unbatched())
    assert plan.matches(_rows(1, 2, 3)) == 3
    assert plan.matches({"x": np.zeros((2, 3), np.float32)}) == -1  # a non-batch dim
    assert plan.matches({"x": np.zeros((2, 2), np.float64)}) == -1  # a dtype
    assert plan.matches({"y": np.zeros((2, 2), np.float32)}) == -1  # a name
    assert plan.matches({**_rows(1), "z": np.zeros((1, 2), np.float32)}) == -1  # one more


def test_batching_off_runs_each_call_alone(model: Path, watch: InlineWatch) -> None:
    plan, session = _plan(model, watch, BatchingOptions.unbatched())
    assert plan.solo
    outputs = plan.run_one(_rows(1, 2), 2, ["y"])
    assert outputs is not None
    np.testing.assert_array_equal(outputs["y"], [[3, 3], [6, 6]])
    plan.run_one(_rows(4), 1, ["y"])
    assert session.batches == [2, 1]


async def test_batching_on_runs_a_turn_s_calls_as_one_batch_cut_at_the_measured_rows(
    model: Path, watch: InlineWatch
) -> None:
    plan, session = _plan(model, watch, BatchingOptions(max_batch_size=32))
    futures = [plan.join(_rows(i, i), 2, ["y"], None) for i in range(5)]  # 10 rows
    await settle()
    # one turn, cut at the session's 4 rows a run: 2 + 2, 2 + 2, 2
    assert session.batches == [4, 4, 2]
    for i, future in enumerate(futures):
        outputs = future.result()
        assert outputs is not None
        np.testing.assert_array_equal(outputs["y"], [[3 * i, 3 * i]] * 2)  # its own rows
    later = plan.join(_rows(9), 1, ["y"], None)
    await settle()
    assert session.batches == [4, 4, 2, 1]  # a new turn, a new batch
    assert later.result() is not None


async def test_a_call_that_left_or_expired_before_its_turn_ran_is_not_run(
    model: Path, watch: InlineWatch
) -> None:
    plan, session = _plan(model, watch, BatchingOptions(max_batch_size=32))
    gone = plan.join(_rows(1), 1, ["y"], None)
    late = plan.join(_rows(2), 1, ["y"], time.monotonic() - 1.0)
    kept = plan.join(_rows(3), 1, ["y"], None)
    gone.cancel()
    await settle()
    assert session.batches == [1]
    assert isinstance(late.exception(), DeadlineExceeded)
    outputs = kept.result()
    assert outputs is not None
    np.testing.assert_array_equal(outputs["y"], [[9, 9]])


async def test_a_full_batch_leaves_and_the_next_call_starts_another(
    model: Path, watch: InlineWatch
) -> None:
    plan, session = _plan(model, watch, BatchingOptions(max_batch_size=2))
    for i in range(3):
        plan.join(_rows(i), 1, ["y"], None)
    await settle()
    assert session.batches == [2, 1]
