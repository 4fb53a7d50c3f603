"""A front end's registry: the snapshot it serves from, what it can route, and what it forwards
to the supervisor (reload, V2's repository load and unload)."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.config.model_config import ModelSpecConfig
from gateway.frontend.pushed_registry import ForwardedRepository, SnapshotModels
from gateway.ipc import snapshot
from gateway.v2.repository_codec import RepositoryCall
from tests.support.fakes import fake_dispatcher
from tests.support.registries import Recorder, served


async def test_availability_is_what_this_front_end_can_route(tmp_path: Path) -> None:
    models = await served(tmp_path)
    dispatcher, (link,) = fake_dispatcher(1)
    link.routed = {"b:4"}
    copy = SnapshotModels(dispatcher, Recorder())
    copy.replace(snapshot.snapshot_from_wire(snapshot.snapshot_to_wire(models, serial=1)))
    assert (copy.is_available("a"), copy.is_available("b"), copy.all_available()) == (
        False,
        True,
        False,
    )
    link.alive = False
    assert not copy.is_available("b")


async def test_an_older_snapshot_never_replaces_a_newer_one(tmp_path: Path) -> None:
    models = await served(tmp_path)
    copy = SnapshotModels(fake_dispatcher(1)[0], Recorder())
    copy.replace(snapshot.snapshot_from_wire(snapshot.snapshot_to_wire(models, serial=5)))
    copy.replace(snapshot.EMPTY)
    assert copy.snapshot.serial == 5 and copy.model_names() == ["a", "b", "gone"]


async def test_apply_goes_to_the_supervisor_with_the_specs(tmp_path: Path) -> None:
    supervisor = Recorder()
    copy = SnapshotModels(fake_dispatcher(1)[0], supervisor)
    spec = ModelSpecConfig("m", "/m", policy="specific", num_versions=0, versions=(2, 3))
    await copy.apply([spec])
    ((op, fields),) = supervisor.calls
    assert op == "apply"
    assert [snapshot.spec_from_wire(s) for s in json.loads(json.dumps(fields["specs"]))] == [spec]


async def test_v2_load_and_unload_go_to_the_supervisor_and_the_index_is_local(
    tmp_path: Path,
) -> None:
    models = await served(tmp_path)
    supervisor = Recorder()
    copy = SnapshotModels(fake_dispatcher(1)[0], supervisor)
    copy.replace(snapshot.snapshot_from_wire(snapshot.snapshot_to_wire(models, serial=1)))
    repository = ForwardedRepository(copy, supervisor)
    await repository.unload(RepositoryCall("b", unload_dependents=True))
    await repository.load(RepositoryCall("gone"))
    assert supervisor.calls == [
        ("v2_repository", {"action": "unload", "model": "b", "unload_dependents": True}),
        ("v2_repository", {"action": "load", "model": "gone", "unload_dependents": False}),
    ]
    assert [e.name for e in repository.index(ready_only=False)] == ["a", "a", "a", "b", "gone"]
