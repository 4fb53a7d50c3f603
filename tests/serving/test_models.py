"""The model manager's version policy and states, with a fake worker pool at the one seam."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import FailedPrecondition, InvalidArgument, NotFound
from gateway.serving.models import ModelManager, Servable, State
from tests.support.fakes import FakePool


def versions(base: Path, *numbers: int) -> None:
    for n in numbers:
        (base / str(n)).mkdir(parents=True, exist_ok=True)
        (base / str(n) / "model.onnx").write_bytes(b"onnx")


def manager(pool: FakePool, *specs: ModelSpecConfig, **hooks: object) -> ModelManager:
    return ModelManager(pool, list(specs), intra_op=1, inter_op=1, **hooks)  # type: ignore[arg-type]


def test_latest_serves_the_highest_and_rolls_forward_load_first(tmp_path: Path) -> None:
    versions(tmp_path, 1, 2)
    pool = FakePool()
    models = manager(pool, ModelSpecConfig("m", str(tmp_path)))
    asyncio.run(models.reconcile())
    assert pool.calls == [("load", "m:2")]
    assert models.resolve("m").version == 2
    versions(tmp_path, 3)
    asyncio.run(models.reconcile())
    assert pool.calls[1:] == [("load", "m:3"), ("unload", "m:2")]  # never without a version
    assert [(s.version, s.state) for s in models.statuses("m")] == [
        (2, State.END),
        (3, State.AVAILABLE),
    ]


def test_all_and_specific_policies(tmp_path: Path) -> None:
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
    asyncio.run(models.reconcile())
    assert sorted(pool.loaded) == ["a:1", "a:2", "a:5", "s:1", "s:5"]
    assert models.resolve("a").version == 5  # no version asked: the latest served
    assert models.resolve("s", version=1).version == 1


def test_labels_resolve_and_unknown_ones_are_refused(tmp_path: Path) -> None:
    versions(tmp_path, 1, 2)
    spec = ModelSpecConfig(
        "m", str(tmp_path), policy="all", num_versions=0, labels={"stable": 1, "canary": 2}
    )
    models = manager(FakePool(), spec)
    asyncio.run(models.reconcile())
    assert models.resolve("m", label="stable").version == 1
    with pytest.raises(InvalidArgument, match="Unrecognized servable version label: beta"):
        models.resolve("m", label="beta")
    with pytest.raises(InvalidArgument, match="both version and version_label"):
        models.resolve("m", version=1, label="stable")


def test_not_found_texts_are_tf_servings(tmp_path: Path) -> None:
    versions(tmp_path, 1)
    models = manager(FakePool(), ModelSpecConfig("m", str(tmp_path)))
    asyncio.run(models.reconcile())
    with pytest.raises(NotFound, match=r"^Servable not found for request: Latest\(nope\)$"):
        models.resolve("nope")
    with pytest.raises(NotFound, match=r"^Servable not found for request: Specific\(m, 7\)$"):
        models.resolve("m", version=7)
    with pytest.raises(NotFound, match=r"^Could not find version 7 of model m$"):
        models.statuses("m", 7)
    with pytest.raises(NotFound, match=r"^Could not find any versions of model nope$"):
        models.statuses("nope")


def test_a_failed_load_is_reported_kept_apart_and_not_retried_in_a_loop(tmp_path: Path) -> None:
    versions(tmp_path / "good", 1)
    versions(tmp_path / "bad", 1)
    pool = FakePool(fail={"bad:1": FailedPrecondition("the model file is corrupt")})
    models = manager(
        pool,
        ModelSpecConfig("good", str(tmp_path / "good")),
        ModelSpecConfig("bad", str(tmp_path / "bad")),
    )
    asyncio.run(models.reconcile())
    (status,) = models.statuses("bad")
    assert status.state == State.END and status.error is not None
    assert status.error.message == "the model file is corrupt"
    assert models.is_available("good") and not models.is_available("bad")
    assert not models.all_available()
    asyncio.run(models.reconcile())
    assert pool.calls.count(("load", "bad:1")) == 1


def test_a_version_folder_without_a_model_fails_that_version(tmp_path: Path) -> None:
    (tmp_path / "1").mkdir()
    (tmp_path / "notaversion").mkdir()
    models = manager(FakePool(), ModelSpecConfig("m", str(tmp_path)))
    asyncio.run(models.reconcile())
    (status,) = models.statuses("m")
    assert status.version == 1 and status.state == State.END
    assert status.error is not None and "no model.onnx or saved_model.pb" in status.error.message


def test_hooks_run_around_loads_and_unloads_in_order(tmp_path: Path) -> None:
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
    asyncio.run(models.reconcile())
    versions(tmp_path, 2)
    asyncio.run(models.reconcile())
    assert models.statuses("m", 2)[0].error is not None  # refused by the hook, never loaded
    assert ("load", "m:2") not in pool.calls
    asyncio.run(models.unload_all())
    assert seen == [
        ("before_load", ("m", 1, "1")),
        ("before_load", ("m", 2, "2")),
        ("before_unload", "m:1"),
    ]
    assert pool.calls[-1] == ("unload", "m:1")
