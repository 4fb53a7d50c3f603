"""Which versions a front end runs itself, with real ONNX Runtime sessions of real models: loaded,
checked and measured on a thread, kept out by the static rule, the budget or the hop, stopped at
the wall-clock limit, demoted by a stall and back after its backoff."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from gateway.errors import InvalidArgument
from gateway.runs.inline_cost import BACKOFF_S
from gateway.runs.inline_runs import FRONTEND, WORKERS, InlineRuns
from gateway.runs.inline_session import InlineSession, load_session
from gateway.runs.inline_watch import InlineWatch
from gateway.serving.signature import Signature
from tests.support import onnx_models
from tests.support.fakes import FakeClock
from workers.backends import onnx as onnx_backend


@dataclass(frozen=True)
class Version:
    """A servable as the registry gives it (what :class:`InlineRuns` reads)."""

    key: str
    directory: str
    signatures: dict[str, Signature]
    platform: str = "onnx"
    runtime: str = ""


def _signature(path: Path) -> dict[str, Signature]:
    """The servable's signature, as a worker describes the model."""
    model = onnx_backend.load(str(path), intra_op=1, inter_op=1)
    return {"serving_default": Signature.from_wire("serving_default", model.signature)}


def _version(root: Path, name: str, build: object) -> Version:
    path = root / name / "1" / "model.onnx"
    path.parent.mkdir(parents=True)
    build(path)  # type: ignore[operator]
    return Version(f"{name}:1", str(path.parent), _signature(path))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Version]:
    root = tmp_path_factory.mktemp("inline-runs")
    return {
        "scaled": _version(root, "scaled", lambda p: onnx_models.scaled(p, 3.0)),
        "looped": _version(root, "looped", onnx_models.looped),
        "addend": _version(root, "addend", lambda p: onnx_models.looped(p, addend=True)),
        "wide": _version(root, "wide", lambda p: onnx_models.identity(p, "float32")),
        "strings": _version(root, "strings", lambda p: onnx_models.identity(p, "string")),
    }


@dataclass
class Heard:
    placed: list[dict[str, str]] = field(default_factory=list)
    demoted: list[tuple[str, int, float]] = field(default_factory=list)


@pytest.fixture
def heard() -> Heard:
    return Heard()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _runs(
    mode: str, heard: Heard, clock: FakeClock, *, budget: int = 2**26, hop: float = 1.0
) -> InlineRuns:
    return InlineRuns(
        mode=mode,
        budget_bytes=budget,
        hop_s=lambda: hop,
        max_output_bytes=2**20,
        on_placed=heard.placed.append,
        on_demote=lambda key, count, until: heard.demoted.append((key, count, until)),
        clock=clock.now,
    )


@pytest.fixture
def runs(heard: Heard, clock: FakeClock) -> Iterator[InlineRuns]:
    runs = _runs("auto", heard, clock)
    yield runs
    runs.close()


async def test_a_light_version_runs_here_and_leaves_when_no_longer_served(
    runs: InlineRuns, models: dict[str, Version], heard: Heard
) -> None:
    scaled = models["scaled"]
    tf = Version("t:1", scaled.directory, scaled.signatures, platform="tensorflow")
    chosen = Version("o:1", scaled.directory, scaled.signatures, runtime="openvino_fp32")
    runs.sync([scaled, tf, chosen])
    assert runs.placed == {
        "scaled:1": WORKERS,
        "t:1": WORKERS,
        "o:1": WORKERS,
    }  # until measured
    await runs.loaded()
    assert runs.placed == {"scaled:1": FRONTEND, "t:1": WORKERS, "o:1": WORKERS}
    session = runs.sessions["scaled:1"]
    assert session.max_rows >= 64
    outputs = session.run({"x": np.array([[1, 2]], np.float32)}, ["y"])
    assert outputs is not None
    np.testing.assert_array_equal(outputs["y"], [[3, 6]])
    runs.sync([tf])
    assert runs.placed == {"t:1": WORKERS} and not runs.sessions
    assert heard.placed[-1] == {"t:1": WORKERS}


@pytest.mark.parametrize(
    ("model", "mode", "budget", "hop", "why"),
    [
        ("scaled", "never", 2**26, 1.0, "never"),
        ("scaled", "auto", 10, 1.0, "over the budget: the directory's bytes"),
        ("scaled", "auto", 2**26, 0.0, "dearer than the worker hop"),
        ("looped", "auto", 2**26, 1.0, "a Loop: its trip count is a caller's value"),
        ("wide", "auto", 2**26, 1.0, "a dimension past the first that callers choose"),
        ("strings", "always", 2**26, 1.0, "strings are converted on the workers"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
async def test_versions_that_stay_on_the_workers(
    models: dict[str, Version],
    heard: Heard,
    clock: FakeClock,
    model: str,
    mode: str,
    budget: int,
    hop: float,
    why: str,
) -> None:
    runs = _runs(mode, heard, clock, budget=budget, hop=hop)
    try:
        runs.sync([models[model]])
        await runs.loaded()
        assert runs.placed == {f"{model}:1": WORKERS}, why
        assert not runs.sessions
    finally:
        runs.close()


async def test_the_budget_counts_external_weights(
    tmp_path: Path, heard: Heard, clock: FakeClock
) -> None:
    """The budget counts the weights of a tiny model.onnx whose weights lie in another file
    of its version directory."""
    path = tmp_path / "ext" / "1" / "model.onnx"
    path.parent.mkdir(parents=True)
    onnx_models.mlp(path, features=64, hidden=512)
    model = onnx.load(str(path))
    onnx.save_model(
        model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0
    )
    weights = (path.parent / "weights.bin").stat().st_size
    assert path.stat().st_size < 4096 < weights
    version = Version("ext:1", str(path.parent), _signature(path))
    tight = _runs("auto", heard, clock, budget=weights // 2)
    roomy = _runs("auto", heard, clock, budget=weights * 64)
    try:
        tight.sync([version])
        roomy.sync([version])
        await tight.loaded()
        await roomy.loaded()
        assert tight.placed == {"ext:1": WORKERS}  # model.onnx alone would fit
        assert roomy.placed == {"ext:1": FRONTEND}
    finally:
        tight.close()
        roomy.close()


async def test_a_stall_moves_a_version_out_until_its_backoff_ends(
    runs: InlineRuns, models: dict[str, Version], heard: Heard, clock: FakeClock
) -> None:
    runs.sync([models["scaled"]])
    await runs.loaded()
    assert runs.placed == {"scaled:1": FRONTEND}
    runs.stalled("scaled:1")
    assert runs.placed == {"scaled:1": WORKERS} and runs.moves == 1
    assert heard.demoted == [("scaled:1", 1, clock.now() + BACKOFF_S[0])]
    runs.retry_due()  # not yet
    await runs.loaded()
    assert runs.placed == {"scaled:1": WORKERS}
    clock.advance(BACKOFF_S[0])
    runs.retry_due()
    await runs.loaded()  # measured afresh
    assert runs.placed == {"scaled:1": FRONTEND}


async def test_the_supervisor_s_demotions_move_a_version_out_here_too(
    runs: InlineRuns, models: dict[str, Version], clock: FakeClock
) -> None:
    runs.sync([models["scaled"]])
    await runs.loaded()
    runs.merge({"scaled:1": (1, clock.now() + 5.0)})
    assert runs.placed == {"scaled:1": WORKERS}
    clock.advance(5.0)
    runs.retry_due()
    await runs.loaded()
    assert runs.placed == {"scaled:1": FRONTEND}


async def test_a_demoted_version_is_not_placed_when_it_arrives(
    runs: InlineRuns, models: dict[str, Version], clock: FakeClock
) -> None:
    runs.merge({"scaled:1": (2, clock.now() + 5.0)})  # a restarted front end hears it first
    runs.sync([models["scaled"]])
    await runs.loaded()
    assert runs.placed == {"scaled:1": WORKERS}


# -- one session under the wall-clock watch -------------------------------------------------------
@pytest.fixture
def watch() -> Iterator[InlineWatch]:
    watch = InlineWatch(limit_s=0.05)
    yield watch
    watch.close()


def _session(version: Version, watch: InlineWatch, stalls: list[str]) -> InlineSession:
    path = str(Path(version.directory) / "model.onnx")
    session = InlineSession(
        version.key, load_session(path), watch, max_output_bytes=2**20, on_stall=stalls.append
    )
    session.max_rows = 1
    return session


def test_a_run_past_the_wall_clock_limit_is_stopped_and_counts_as_a_stall(
    models: dict[str, Version], watch: InlineWatch
) -> None:
    stalls: list[str] = []
    session = _session(models["looped"], watch, stalls)
    x = np.zeros((1, 2), np.float32)
    assert session.run({"x": x, "k": np.array([3], np.int64)}, ["y"]) is not None
    endless: dict[str, np.ndarray] = {"x": x, "k": np.array([10**9], np.int64)}  # hours of loop
    assert session.run(endless, ["y"]) is None  # stopped: run it on a worker
    assert session.stops == 1 and watch.stopped == 1
    assert stalls == ["looped:1"]  # it was computing, not waiting for the core
    again = session.run({"x": x, "k": np.array([2], np.int64)}, ["y"])  # the next runs are whole
    assert again is not None
    np.testing.assert_array_equal(again["y"], [[2, 2]])


class LateWatch(InlineWatch):
    """A watch whose thread is never started; it keeps every run's options it was shown, so a
    test can set ``terminate`` late, as a thread that read them just before the run ended."""

    def __init__(self) -> None:
        super().__init__(limit_s=60.0)
        self.shown: list[Any] = []

    def start(self) -> None:
        pass

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "options" and value is not None:
            self.shown.append(value)
        super().__setattr__(name, value)


def test_a_stop_set_after_its_run_ended_never_stops_the_next_run(
    models: dict[str, Version],
) -> None:
    watch = LateWatch()
    session = _session(models["scaled"], watch, [])
    x = np.array([[1, 2]], np.float32)
    assert session.run({"x": x}, ["y"]) is not None
    watch.shown[-1].terminate = True  # the watch read the options, then the run ended
    again = session.run({"x": x}, ["y"])
    assert again is not None and session.stops == 0
    np.testing.assert_array_equal(again["y"], [[3, 6]])


def test_a_run_that_fails_after_its_work_counts_as_a_stall(models: dict[str, Version]) -> None:
    stalls: list[str] = []
    watch = InlineWatch(limit_s=60.0)  # this run is never stopped: it fails by itself
    session = _session(models["addend"], watch, stalls)
    x = np.zeros((1, 2), np.float32)
    trips = 1
    while True:  # enough trips to pass the stall bound, fewer than the watch allows
        feeds: dict[str, np.ndarray] = {
            "x": x,
            "k": np.array([trips], np.int64),
            "z": np.zeros((1, 3), np.float32),
        }
        with pytest.raises(InvalidArgument):  # z's width 3 does not broadcast: after the loop
            session.run(feeds, ["y"])
        if stalls or trips > 10**6:
            break
        trips *= 4
    watch.close()
    assert stalls == ["addend:1"] and session.stops == 0
