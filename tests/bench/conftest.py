"""Fixtures of the bench tests: the bench MLP built once per module in a temporary directory."""

from __future__ import annotations

import pytest

from bench.systems.models import build_mlp, model_path
from bench.systems.targets import Context


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Context:
    """Models and logs of the systems a test module starts (the MLP only)."""
    root = tmp_path_factory.mktemp("bench-models")
    build_mlp(model_path(root, "mlp"))
    return Context(root, tmp_path_factory.mktemp("bench-logs"))
