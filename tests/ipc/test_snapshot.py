"""The registry pushed to front ends answers as the model manager it was read from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import ServingError
from gateway.frontend.pushed_registry import SnapshotModels
from gateway.ipc import snapshot
from gateway.serving.registry import Models, Servable, State, VersionStatus
from gateway.serving.signature import Signature, TensorSpec
from tests.support.fakes import fake_dispatcher
from tests.support.registries import Recorder, served


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


async def test_a_front_end_answers_every_query_as_the_supervisor_does(tmp_path: Path) -> None:
    models = await served(tmp_path)
    wire = json.loads(json.dumps(snapshot.snapshot_to_wire(models, serial=1)))  # what crosses
    dispatcher, (link,) = fake_dispatcher(1)
    link.routed = {"a:1", "a:2", "b:4"}
    copy = SnapshotModels(dispatcher, Recorder())
    copy.replace(snapshot.snapshot_from_wire(wire))
    for query in QUERIES:
        assert _answer(copy, query) == _answer(models, query)


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
            "serving_default",
            (TensorSpec("images", "float32", (-1, 224, 224, 3)),),
            (TensorSpec("probabilities", "float32", (-1, 1000)),),
            encoded_images=True,
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
    signatures = {signature.name: signature}
    servable = Servable("m", 1, "m:1", "tensorflow", signatures, "/m/1", "openvino_bf16")
    wire = json.loads(json.dumps(snapshot.snapshot_to_wire(OneServable(servable), serial=1)))
    copy = snapshot.snapshot_from_wire(wire).models["m"].servables[1]
    assert copy == servable
    assert copy.signatures[signature.name].image_inputs == signature.image_inputs


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

    async def rescan(self, name: str) -> None:
        raise NotImplementedError
