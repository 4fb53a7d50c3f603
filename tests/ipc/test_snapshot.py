"""The registry pushed to front ends answers as the model manager it was read from."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import FailedPrecondition, ServingError
from gateway.frontend.registry import SnapshotModels
from gateway.ipc import snapshot
from gateway.models.loader import LoadOptions
from gateway.models.manager import ModelManager
from gateway.serving.registry import Models, Servable, State, VersionStatus
from gateway.serving.signature import Signature, TensorSpec
from tests.support.fakes import FakePool, fake_dispatcher


def _versions(base: Path, *numbers: int) -> None:
    for n in numbers:
        (base / str(n)).mkdir(parents=True, exist_ok=True)
        (base / str(n) / "model.onnx").write_bytes(b"onnx")


class Recorder:
    """The supervisor end of a front end's registry: records what ``apply`` forwards."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, op: str, fds: object = (), **fields: Any) -> dict[str, Any]:
        self.calls.append((op, fields))
        return {}


def _served(tmp_path: Path) -> ModelManager:
    _versions(tmp_path / "a", 1, 2, 3)
    _versions(tmp_path / "b", 4)
    _versions(tmp_path / "gone", 1)
    pool = FakePool(fail={"a:3": FailedPrecondition("bad file")})
    specs = [
        ModelSpecConfig("a", str(tmp_path / "a"), policy="all", num_versions=0, labels={"s": 1}),
        ModelSpecConfig("b", str(tmp_path / "b")),
        ModelSpecConfig("gone", str(tmp_path / "gone")),
    ]
    models = ModelManager(
        pool, specs, intra_op=1, inter_op=1, options=LoadOptions(allow_unavailable_labels=True)
    )
    asyncio.run(models.apply(specs))
    asyncio.run(models.apply(specs[:2]))  # "gone" leaves: its states stay visible
    return models


def _answer(models: Models, call: Any) -> Any:
    try:
        return ("ok", call(models))
    except ServingError as exc:
        return (exc.code, exc.message)


QUERIES = [
    lambda m: m.model_names(),
    lambda m: m.specs(),
    lambda m: [
        (s.version, s.state, s.error and s.error.message, s.warmup) for s in m.statuses("a")
    ],
    lambda m: m.statuses("a", 2),
    lambda m: m.statuses("a", 9),
    lambda m: m.statuses("gone"),
    lambda m: m.statuses("nothing"),
    lambda m: m.resolve("a"),
    lambda m: m.resolve("a", 1),
    lambda m: m.resolve("a", label="s"),
    lambda m: m.resolve("a", label="nope"),
    lambda m: m.resolve("a", 3),
    lambda m: m.resolve("a", 1, "s"),
    lambda m: m.resolve("gone"),
    lambda m: m.resolve("b").signatures,
    lambda m: [m.is_available(n) for n in ("a", "b", "gone", "nothing")],
    lambda m: m.all_available(),
]


def test_a_front_end_answers_every_query_as_the_supervisor_does(tmp_path: Path) -> None:
    models = _served(tmp_path)
    wire = json.loads(json.dumps(snapshot.encode(models, serial=1)))  # what crosses
    dispatcher, (link,) = fake_dispatcher(1)
    link.routed = {"a:1", "a:2", "b:4"}
    copy = SnapshotModels(dispatcher, Recorder())
    copy.replace(snapshot.decode(wire))
    for query in QUERIES:
        assert _answer(copy, query) == _answer(models, query)


def test_availability_is_what_this_front_end_can_route(tmp_path: Path) -> None:
    models = _served(tmp_path)
    dispatcher, (link,) = fake_dispatcher(1)
    link.routed = {"b:4"}
    copy = SnapshotModels(dispatcher, Recorder())
    copy.replace(snapshot.decode(snapshot.encode(models, serial=1)))
    assert (copy.is_available("a"), copy.is_available("b"), copy.all_available()) == (
        False,
        True,
        False,
    )
    link.alive = False
    assert not copy.is_available("b")


def test_an_older_snapshot_never_replaces_a_newer_one(tmp_path: Path) -> None:
    models = _served(tmp_path)
    copy = SnapshotModels(fake_dispatcher(1)[0], Recorder())
    copy.replace(snapshot.decode(snapshot.encode(models, serial=5)))
    copy.replace(snapshot.EMPTY)
    assert copy.snapshot.serial == 5 and copy.model_names() == ["a", "b", "gone"]


def test_apply_goes_to_the_supervisor_with_the_specs(tmp_path: Path) -> None:
    supervisor = Recorder()
    copy = SnapshotModels(fake_dispatcher(1)[0], supervisor)
    spec = ModelSpecConfig("m", "/m", policy="specific", num_versions=0, versions=(2, 3))
    asyncio.run(copy.apply([spec]))
    ((op, fields),) = supervisor.calls
    assert op == "apply"
    assert [snapshot.spec_from_wire(s) for s in json.loads(json.dumps(fields["specs"]))] == [spec]


@pytest.mark.parametrize(
    "signature",
    [
        Signature(
            "serving_default",
            (TensorSpec("x", "float32", (-1, 4), "x:0"),),
            (TensorSpec("y", "string", None),),
            check_shapes=False,
        ),
        Signature(
            "__saved_model_init_op",
            (),
            (),
            method_name="",
            unservable="an init op",
            definition=b"\x00\x01binary",
        ),
    ],
)
def test_signatures_cross_unchanged(signature: Signature) -> None:
    servable = Servable("m", 1, "m:1", "tensorflow", {signature.name: signature}, "/m/1")
    wire = json.loads(json.dumps(snapshot.encode(OneServable(servable), serial=1)))
    assert snapshot.decode(wire).models["m"].servables[1] == servable


class OneServable:
    """A registry of one available servable (its model configured)."""

    def __init__(self, servable: Servable) -> None:
        self.servable = servable

    def model_names(self) -> list[str]:
        return [self.servable.model]

    def specs(self) -> list[ModelSpecConfig]:
        return [ModelSpecConfig(self.servable.model, "/m")]

    def statuses(self, name: str, version: int | None = None) -> list[VersionStatus]:
        return [VersionStatus(self.servable.version, State.AVAILABLE)]

    def resolve(self, name: str, version: int | None = None, label: str | None = None) -> Servable:
        return self.servable

    def is_available(self, name: str) -> bool:
        return True

    def all_available(self) -> bool:
        return True

    async def apply(self, specs: object) -> None:
        raise NotImplementedError
