"""What the model manager's tests share: version folders on disk and a manager over a fake pool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.config.model_config import ModelSpecConfig
from gateway.models.manager import ModelManager
from tests.support.fakes import FakePool


def versions(base: Path, *numbers: int) -> None:
    """Make version folders ``base/<n>``, each holding a (dummy) ``model.onnx``."""
    for n in numbers:
        (base / str(n)).mkdir(parents=True, exist_ok=True)
        (base / str(n) / "model.onnx").write_bytes(b"onnx")


def manager(pool: FakePool, *specs: ModelSpecConfig, **kw: Any) -> ModelManager:
    """A manager of ``specs`` on ``pool`` (one intra- and inter-op thread; ``kw``: its options)."""
    return ModelManager(pool, list(specs), intra_op=1, inter_op=1, **kw)
