"""The model manager's version policy and states, with a fake worker pool at the one seam."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import Code, FailedPrecondition, InvalidArgument, NotFound, ServingError
from gateway.models.loader import LoadOptions
from gateway.serving.registry import Servable, State
from gateway.worker_channel.warmup_runs import WarmupRun
from tests.models.harness import manager, versions
from tests.support.fakes import FakePool
from tests.support.idle_loop import settle

T = TypeVar("T")
WAIT_S = 30.0
"""Bound of every wait (never reached when things work)."""


async def test_latest_serves_the_highest_and_rolls_forward_load_first(tmp_path: Path) -> None:
    versions(tmp_path, 1, 2)
    pool = FakePool()
    models = manager(pool, ModelSpecConfig("m", str(tmp_path)))
    await models.reconcile()
    assert pool.calls == [("load", "m:2")]
    assert models.resolve("m").version == 2
    versions(tmp_path, 3)
    await models.reconcile()
    assert pool.calls[1:] == [("load", "m:3"), ("unload", "m:2")]  # never without a version
    assert [(s.version, s.state) for s in models.statuses("m")] == [
        (2, State.END),
        (3, State.AVAILABLE),
    ]


async def test_all_and_specific_policies(tmp_path: Path) -> None:
    versions(tmp_path / "a", 1, 2, 5)
    versions(tmp_path / "s", 1, 2, 5)
    pool = FakePool()
    models = manager(
        pool,
        ModelSpecConfig("a", str(tmp_path / "a"), policy="all", num_versions=0),
        ModelSpecConfig(
            "s", str(tmp_path / "s"), policy="specific", num_versions=0, versions=(1, 5)
        ),
    )
    await models.reconcile()
    assert sorted(pool.loaded) == ["a:1", "a:2", "a:5", "s:1", "s:5"]
    assert models.resolve("a").version == 5  # no version asked: the latest served
    assert models.resolve("s", version=1).version == 1


async def test_labels_resolve_and_unknown_ones_are_refused(tmp_path: Path) -> None:
    versions(tmp_path, 1, 2)
    spec = ModelSpecConfig(
        "m", str(tmp_path), policy="all", num_versions=0, labels={"stable": 1, "canary": 2}
    )
    models = manager(FakePool(), spec)
    await models.reconcile()
    assert models.resolve("m", label="stable").version == 1
    with pytest.raises(InvalidArgument, match="Unrecognized servable version label: beta"):
        models.resolve("m", label="beta")
    with pytest.raises(InvalidArgument, match="both version and version_label"):
        models.resolve("m", version=1, label="stable")


async def test_not_found_texts_are_tf_servings(tmp_path: Path) -> None:
    versions(tmp_path, 1)
    models = manager(FakePool(), ModelSpecConfig("m", str(tmp_path)))
    await models.reconcile()
    with pytest.raises(NotFound, match=r"^Servable not found for request: Latest\(nope\)$"):
        models.resolve("nope")
    with pytest.raises(NotFound, match=r"^Servable not found for request: Specific\(m, 7\)$"):
        models.resolve("m", version=7)
    with pytest.raises(NotFound, match=r"^Could not find version 7 of model m$"):
        models.statuses("m", 7)
    with pytest.raises(NotFound, match=r"^Could not find any versions of model nope$"):
        models.statuses("nope")


async def test_a_failed_load_is_reported_kept_apart_and_not_retried_in_a_loop(
    tmp_path: Path,
) -> None:
    versions(tmp_path / "good", 1)
    versions(tmp_path / "bad", 1)
    pool = FakePool(fail={"bad:1": FailedPrecondition("the model file is corrupt")})
    models = manager(
        pool,
        ModelSpecConfig("good", str(tmp_path / "good")),
        ModelSpecConfig("bad", str(tmp_path / "bad")),
    )
    await models.reconcile()
    (status,) = models.statuses("bad")
    assert status.state == State.END and status.error is not None
    assert status.error.message == "the model file is corrupt"
    assert models.is_available("good") and not models.is_available("bad")
    assert not models.all_available()
    await models.reconcile()
    assert pool.calls.count(("load", "bad:1")) == 1


async def test_a_version_folder_without_a_model_fails_that_version(tmp_path: Path) -> None:
    (tmp_path / "1").mkdir()
    (tmp_path / "notaversion").mkdir()
    models = manager(FakePool(), ModelSpecConfig("m", str(tmp_path)))
    await models.reconcile()
    (status,) = models.statuses("m")
    assert status.version == 1 and status.state == State.END
    assert status.error is not None and "no model.onnx or saved_model.pb" in status.error.message


async def test_hooks_run_around_loads_and_unloads_in_order(tmp_path: Path) -> None:
    versions(tmp_path, 1)
    pool = FakePool()
    seen: list[tuple[str, object]] = []

    def before_load(model: str, version: int, directory: str) -> None:
        seen.append(("before_load", (model, version, Path(directory).name)))
        if version == 2:
            raise FailedPrecondition("bad batching_params.pbtxt")

    async def before_unload(servable: Servable) -> None:
        seen.append(("before_unload", servable.key))
        assert pool.hosts(servable.key)  # its queues drain while the worker still has it

    models = manager(
        pool,
        ModelSpecConfig("m", str(tmp_path), policy="all", num_versions=0),
        before_load=before_load,
        before_unload=before_unload,
    )
    await models.reconcile()
    versions(tmp_path, 2)
    await models.reconcile()
    assert models.statuses("m", 2)[0].error is not None  # refused by the hook, never loaded
    assert ("load", "m:2") not in pool.calls
    await models.unload_all()
    assert seen == [
        ("before_load", ("m", 1, "1")),
        ("before_load", ("m", 2, "2")),
        ("before_unload", "m:1"),
    ]
    assert pool.calls[-1] == ("unload", "m:1")


# -- a whole new config: add, change, remove; TF Serving's rules ---------------------------------
async def test_apply_adds_changes_and_removes_models_draining_the_removed(tmp_path: Path) -> None:
    versions(tmp_path / "a", 1, 2)
    versions(tmp_path / "b", 3)
    pool = FakePool()
    drained: list[str] = []

    async def before_unload(servable: Servable) -> None:
        drained.append(servable.key)

    a = ModelSpecConfig("a", str(tmp_path / "a"))
    b = ModelSpecConfig("b", str(tmp_path / "b"))

    models = manager(pool, a, before_unload=before_unload)
    await models.apply([a])
    assert models.resolve("a").version == 2
    a1 = ModelSpecConfig("a", str(tmp_path / "a"), policy="specific", versions=(1,))
    await models.apply([a1, b])  # a changes policy, b is new
    assert models.resolve("a").version == 1 and models.resolve("b").version == 3
    assert pool.calls[-3:] == [("load", "a:1"), ("unload", "a:2"), ("load", "b:3")] or (
        pool.calls[-3:] == [("load", "a:1"), ("load", "b:3"), ("unload", "a:2")]
    )
    await models.apply([b])  # a is dropped: drained, unloaded, NOT_FOUND, states kept
    assert drained == ["a:2", "a:1"]
    assert "a:1" not in pool.loaded
    with pytest.raises(NotFound, match=r"Servable not found for request: Latest\(a\)"):
        models.resolve("a")
    assert [s.state for s in models.statuses("a")] == [State.END, State.END]
    assert not models.is_available("a") and models.all_available()
    assert models.specs() == [b]
    assert models.model_names() == ["a", "b"]  # "a" stays known: health says NOT_SERVING


async def test_a_new_model_that_fails_is_tf_servings_unknown_error(tmp_path: Path) -> None:
    versions(tmp_path / "bad", 4)
    pool = FakePool(fail={"bad:4": FailedPrecondition("the model file is corrupt")})
    bad = ModelSpecConfig("bad", str(tmp_path / "bad"))
    (tmp_path / "nothing").mkdir()  # exists, holds no version (a missing one: test_base_path)
    empty = ModelSpecConfig("empty", str(tmp_path / "nothing"))
    models = manager(pool)
    with pytest.raises(ServingError) as info:
        await models.apply([bad, empty])
    assert info.value.code == Code.UNKNOWN
    assert info.value.message == (
        "2 model(s) did not become available: {{{name: bad version: 4} due to error: "
        "FAILED_PRECONDITION: the model file is corrupt}, {{name: empty} found no version to "
        "load}, }"
    )
    assert models.specs() == [bad, empty]  # applied all the same; the failure is reported


async def test_labels_must_name_available_versions(tmp_path: Path) -> None:
    versions(tmp_path, 1, 2)
    base = ModelSpecConfig("m", str(tmp_path), policy="specific", versions=(1,))

    def labelled(**labels: int) -> ModelSpecConfig:
        return ModelSpecConfig("m", str(tmp_path), policy="all", labels=labels)

    models = manager(FakePool())
    await models.apply([base])
    with pytest.raises(
        FailedPrecondition,
        match=r"^Request to assign label to version 2 of model m, which is not currently "
        r"available for inference$",
    ):
        await models.apply([labelled(canary=2)])
    assert models.specs() == [base]  # refused before any change
    await models.apply([labelled(stable=1)])
    assert models.resolve("m", label="stable").version == 1
    await models.apply([labelled(stable=1, canary=2)])  # 2 is available now
    assert models.resolve("m", label="canary").version == 2


async def test_a_label_move_and_a_model_added_without_its_base_path_tell_on_change(
    tmp_path: Path,
) -> None:
    """What the registry answers changes though no version changes state: ``on_change`` hears
    it (a supervisor pushes the registry to its front ends from there); an unchanged config
    tells nothing."""
    versions(tmp_path / "m", 1, 2)
    stable_on = {
        v: ModelSpecConfig("m", str(tmp_path / "m"), policy="all", labels={"stable": v})
        for v in (1, 2)
    }
    ghost = ModelSpecConfig("ghost", str(tmp_path / "not-yet"))
    changes: list[str] = []

    models = manager(FakePool(), on_change=lambda: changes.append("changed"))
    await models.apply([ModelSpecConfig("m", str(tmp_path / "m"), policy="all")])
    await models.apply([stable_on[1]])
    changes.clear()
    await models.apply([stable_on[1]])
    assert changes == []
    await models.apply([stable_on[2]])  # both versions serve already: only the label moves
    assert changes and models.resolve("m", label="stable").version == 2
    changes.clear()
    await models.apply([stable_on[2], ghost])
    assert changes and [s.name for s in models.specs()] == ["m", "ghost"]


async def test_allow_unavailable_labels_lets_only_new_labels_wait_for_their_version(
    tmp_path: Path,
) -> None:
    versions(tmp_path, 1)
    spec = ModelSpecConfig("m", str(tmp_path), policy="all", labels={"stable": 1, "next": 9})

    models = manager(FakePool(), options=LoadOptions(allow_unavailable_labels=True))
    await models.apply([spec])  # "next" names version 9, not on disk: a new label may
    with pytest.raises(NotFound, match=r"Specific\(m, 9\)"):
        models.resolve("m", label="next")
    moved = ModelSpecConfig("m", str(tmp_path), policy="all", labels={"stable": 9})
    with pytest.raises(FailedPrecondition, match="version 9 of model m"):
        await models.apply([moved])  # an in-use label never moves to an unavailable one


async def test_a_model_may_not_change_platform(tmp_path: Path) -> None:
    versions(tmp_path, 1)
    models = manager(FakePool())
    await models.apply([ModelSpecConfig("m", str(tmp_path), platform="onnx")])
    with pytest.raises(
        InvalidArgument,
        match=r"^Illegal to change a model's platform. For model m platform was onnx and new "
        r"platform requested is tensorflow$",
    ):
        await models.apply([ModelSpecConfig("m", str(tmp_path), platform="tensorflow")])


# -- load failures and retries ------------------------------------------------------------------
async def test_failed_loads_are_retried_then_given_up(tmp_path: Path) -> None:
    versions(tmp_path / "flaky", 1)
    versions(tmp_path / "broken", 1)
    error = FailedPrecondition("not yet")
    pool = FakePool(fail={"flaky:1": error, "broken:1": error}, fail_times={"flaky:1": 2})
    models = manager(
        pool,
        ModelSpecConfig("flaky", str(tmp_path / "flaky")),
        ModelSpecConfig("broken", str(tmp_path / "broken")),
        options=LoadOptions(retries=2),
    )
    await models.reconcile()
    assert pool.calls.count(("load", "flaky:1")) == 3  # two failures, then it loads
    assert models.statuses("flaky")[0].state == State.AVAILABLE
    assert pool.calls.count(("load", "broken:1")) == 3  # 1 + max_num_load_retries
    (status,) = models.statuses("broken")
    assert status.state == State.END and status.error is error
    assert models.is_available("flaky")  # a failing model never takes the others down


async def test_a_new_config_stops_the_retries_of_a_model_it_drops(tmp_path: Path) -> None:
    versions(tmp_path, 1)
    pool = FakePool(fail={"m:1": FailedPrecondition("corrupt")})
    spec = ModelSpecConfig("m", str(tmp_path))
    models = manager(pool, spec, options=LoadOptions(retries=5, retry_interval_s=3600.0))

    loading = asyncio.create_task(models.reconcile())
    await settle()  # the first attempt failed; the retry waits an hour
    assert pool.calls == [("load", "m:1")] and not loading.done()
    await asyncio.wait_for(models.apply([]), WAIT_S)  # drops m: its wait ends at once
    await asyncio.wait_for(loading, WAIT_S)
    assert pool.calls == [("load", "m:1")]
    assert models.statuses("m")[0].state == State.END


# -- placement and warmup -------------------------------------------------------------------------
async def test_each_version_gets_its_models_worker_count(tmp_path: Path) -> None:
    versions(tmp_path / "big", 1)
    versions(tmp_path / "small", 1)
    versions(tmp_path / "other", 1)
    pool = FakePool()
    placement = {"big": 1, "*": 2}
    models = manager(
        pool,
        *(ModelSpecConfig(n, str(tmp_path / n)) for n in ("big", "small", "other")),
        options=LoadOptions(placement=placement),
    )
    await models.reconcile()
    assert {k: s.workers for k, s in pool.specs.items()} == {
        "big:1": 1,
        "small:1": 2,
        "other:1": 2,
    }
    assert await placement_default(tmp_path) == 0


async def placement_default(tmp_path: Path) -> int:
    pool = FakePool()
    await manager(pool, ModelSpecConfig("big", str(tmp_path / "big"))).reconcile()
    return int(pool.specs["big:1"].workers)  # no --model_workers: every worker


async def test_warmup_runs_before_the_version_is_available_and_its_failure_fails_the_load(
    tmp_path: Path,
) -> None:
    versions(tmp_path / "m", 1)
    versions(tmp_path / "bad", 1)
    pool = FakePool()
    seen: list[tuple[str, State, int]] = []

    async def warmup(servable: Servable) -> list[WarmupRun]:
        assert servable.directory == str(tmp_path / servable.model / "1")
        if servable.model == "bad":
            raise InvalidArgument("Failed to parse warmup record")
        x = np.zeros((1, 4), np.float32)
        return [WarmupRun("serving_default", {"x": x}, None, 2) for _ in range(3)]

    def on_change() -> None:
        for name in ("m", "bad"):
            for status in models.statuses(name) if f"{name}:1" in pool.specs else []:
                runs = sum(r.runs for r in status.warmup)
                seen.append((name, status.state, runs))

    models = manager(
        pool,
        ModelSpecConfig("m", str(tmp_path / "m")),
        ModelSpecConfig("bad", str(tmp_path / "bad")),
        on_change=on_change,
        warmup=warmup,
    )
    await models.reconcile()
    assert pool.warmed["m:1"] == 6  # 3 records x 2 iterations, replayed by the pool
    assert ("m", State.AVAILABLE, 6) in seen and ("m", State.AVAILABLE, 0) not in seen
    (status,) = models.statuses("bad")
    assert status.state == State.END and status.error is not None
    assert status.error.message == "Failed to parse warmup record"
