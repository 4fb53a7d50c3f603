"""A model manager serving known states, and the supervisor's end of a front end's registry, for
the registry tests of front ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import FailedPrecondition
from gateway.models.loader import LoadOptions
from gateway.models.manager import ModelManager
from tests.support.fakes import FakePool


def _versions(base: Path, *numbers: int) -> None:
    for n in numbers:
        (base / str(n)).mkdir(parents=True, exist_ok=True)
        (base / str(n) / "model.onnx").write_bytes(b"onnx")


class Recorder:
    """The supervisor's end of a front end's registry: records every request, answers ``{}``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, op: str, fds: object = (), **fields: Any) -> dict[str, Any]:
        self.calls.append((op, fields))
        return {}


async def served(tmp_path: Path) -> ModelManager:
    """``a`` (versions 1 and 2 available, 3 failed; label ``s`` → 1), ``b`` (4) and ``gone``
    (configured, then left out: its states stay), on a fake pool hosting what loaded."""
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
    await models.apply(specs)
    await models.apply(specs[:2])  # "gone" leaves: its states stay visible
    return models
