"""The model the pool tests load: ``scaled`` (y = 3x, x of shape [-1, 2])."""

from __future__ import annotations

import pytest

from tests.support import onnx_models


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(onnx_models.scaled(tmp_path_factory.mktemp("pool") / "model.onnx", 3.0))
