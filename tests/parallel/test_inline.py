"""Runs inside the front end: the cost rule, the inline link, its place in the dispatcher, and
the versions kept in step with the registry (a real ONNX Runtime session of a real model)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from channel.span_wire import SpanForm
from gateway.errors import InvalidArgument
from gateway.parallel.inline_cost import (
    LOOP_BOUND_S,
    SETTLE_RUNS,
    SLOW_RATIO,
    STALL_S,
    RunCost,
    decide,
)
from gateway.parallel.inline_link import InlineLink, InlineVersion
from gateway.parallel.inline_runs import FRONTEND, WORKERS, InlineRuns, measured_session
from tests.support import onnx_models
from tests.support.fakes import fake_dispatcher


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """y = 3x, x of shape [-1, 2], in ``<dir>/1/model.onnx``."""
    root = tmp_path_factory.mktemp("inline")
    (root / "1").mkdir()
    return onnx_models.scaled(root / "1" / "model.onnx", 3.0)


# -- the rule --------------------------------------------------------------------------------------
def test_cost_fits_a_line_and_bounds_the_loop() -> None:
    cost = RunCost.fit({1: 10e-6, 8: 17e-6, 64: 73e-6})
    assert cost.fixed_s == pytest.approx(9e-6)
    assert cost.per_row_s == pytest.approx(1e-6)
    assert cost.predict(100) == pytest.approx(109e-6)
    assert cost.fits_loop(900)
    assert not cost.fits_loop(int(LOOP_BOUND_S / 1e-6))


def test_decide_by_mode_and_measured_hop() -> None:
    light, heavy = RunCost(8e-6, 1e-6), RunCost(50e-3, 1e-3)
    assert decide("auto", light, hop_s=100e-6)
    assert not decide("auto", heavy, hop_s=100e-6)
    assert not decide("auto", light, hop_s=5e-6)  # the hop measured cheaper than the run
    assert decide("always", heavy, hop_s=100e-6)
    assert not decide("never", light, hop_s=100e-6)


def test_a_version_moves_after_settling_when_it_turns_slow_or_at_once_on_a_stall() -> None:
    cost = RunCost(10e-6, 0.0)
    slow = 10e-6 * SLOW_RATIO * 2
    moved = [cost.record(1, slow) for _ in range(SETTLE_RUNS)]
    assert not any(moved[:-1]) and moved[-1]
    assert RunCost(10e-6, 0.0).record(1, STALL_S * 2)
    steady = RunCost(10e-6, 0.0)
    assert not any(steady.record(1, 12e-6) for _ in range(SETTLE_RUNS * 4))


# -- the link --------------------------------------------------------------------------------------
class Clock:
    """An injected CPU-time source: each reading is ``step`` seconds after the last."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _version(path: Path) -> InlineVersion:
    """A real session of ``path``; its cost as given here (10 µs + 1 µs per row)."""
    session, _ = measured_session(str(path))
    cost = RunCost(10e-6, 1e-6)
    return InlineVersion(session, cost, SpanForm.of("compute", {}))


def _submit(link: InlineLink, rows: np.ndarray, outputs: list[str] | None = None) -> object:
    layout = {"x": (rows.dtype, rows.shape)}

    def fill(name: str, dest: np.ndarray) -> None:
        dest[...] = rows

    return link.submit("m:1", layout, fill, outputs, None, trace=(7, 9))


def test_a_batch_runs_at_once_in_the_session_with_owned_outputs_and_a_span(scaled: Path) -> None:
    async def go() -> None:
        link = InlineLink()
        link.add("m:1", _version(scaled), route=True)
        future = _submit(link, np.array([[1, 2], [3, 4]], np.float32))
        assert future.done()  # type: ignore[attr-defined]
        result = future.result()  # type: ignore[attr-defined]
        (name,) = result.outputs
        np.testing.assert_array_equal(result.outputs[name], [[3, 6], [9, 12]])
        assert result.lease is None and result.spans is not None and result.spans.count == 1
        bad = _submit(link, np.zeros((1, 3), np.float32))  # wrong width: the runtime's error
        assert isinstance(bad.exception(), InvalidArgument)  # type: ignore[attr-defined]

    asyncio.run(go())


def test_a_version_that_turns_slow_leaves_and_the_dispatcher_sends_it_to_a_worker(
    scaled: Path,
) -> None:
    async def go() -> None:
        dispatcher, (worker,) = fake_dispatcher(1)
        link = InlineLink(timer=Clock(STALL_S * 2))
        moves: list[str] = []
        link.on_move = moves.append
        link.add("m:1", _version(scaled), route=True)
        dispatcher.inline = link
        assert dispatcher.pick("m:1", rows=2) is link
        assert dispatcher.pick("m:1", rows=10**6) is worker  # past the loop bound
        ok = _submit(link, np.ones((1, 2), np.float32))
        assert ok.result() is not None  # type: ignore[attr-defined]  # the slow call is served
        assert moves == ["m:1"]
        assert dispatcher.pick("m:1", rows=2) is worker

    asyncio.run(go())


# -- the versions kept in step --------------------------------------------------------------------
@dataclass(frozen=True)
class Version:
    key: str
    platform: str
    directory: str
    runtime: str = ""


def test_sync_loads_light_onnx_versions_here_and_drops_what_is_gone(scaled: Path) -> None:
    async def go() -> None:
        placed: list[dict[str, str]] = []
        runs = InlineRuns(
            InlineLink(),
            mode="auto",
            budget_bytes=2**20,
            hop_s=lambda: 1.0,
            on_placed=lambda p: placed.append(dict(p)),
        )
        onnx = Version("m:1", "onnx", str(scaled.parent))
        tf = Version("t:1", "tensorflow", str(scaled.parent))
        chosen = Version("o:1", "onnx", str(scaled.parent), runtime="openvino_fp32")
        runs.sync([onnx, tf, chosen])
        assert runs.placed == {"m:1": WORKERS, "t:1": WORKERS, "o:1": WORKERS}  # until measured
        await runs.loaded()  # on a thread
        assert runs.placed["m:1"] == FRONTEND
        assert runs.link.routed == {"m:1"}
        assert runs.placed["o:1"] == WORKERS  # the runtime the user chose stays theirs
        runs.sync([tf])
        assert runs.placed == {"t:1": WORKERS} and not runs.link.routed
        assert placed[-1] == {"t:1": WORKERS}

    asyncio.run(go())


@pytest.mark.parametrize(
    ("mode", "budget", "hop_s"),
    [("never", 2**20, 1.0), ("auto", 10, 1.0), ("auto", 2**20, 0.0)],
    ids=["never", "over-budget", "dearer-than-the-hop"],
)
def test_versions_that_stay_on_the_workers(
    scaled: Path, mode: str, budget: int, hop_s: float
) -> None:
    async def go() -> None:
        runs = InlineRuns(InlineLink(), mode=mode, budget_bytes=budget, hop_s=lambda: hop_s)
        runs.sync([Version("m:1", "onnx", str(scaled.parent))])
        await runs.loaded()
        assert runs.placed == {"m:1": WORKERS} and not runs.link.routed
        runs.close()

    asyncio.run(go())
