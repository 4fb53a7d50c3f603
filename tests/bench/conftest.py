"""Fixtures of the bench tests: the bench MLP built once per module in a temporary directory, and
tensorgate serving it over gRPC or REST."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.systems.catalog import CATALOG
from bench.systems.models import build_mlp, model_path
from bench.systems.start import start
from bench.systems.targets import Context, Running


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Context:
    """Models and logs of the systems a test module starts (the MLP only)."""
    root = tmp_path_factory.mktemp("bench-models")
    build_mlp(model_path(root, "mlp"))
    return Context(root, tmp_path_factory.mktemp("bench-logs"))


def _serving(context: Context, system: str) -> Iterator[Running]:
    running = start(context, CATALOG[system], "mlp", ())
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def gateway(context: Context) -> Iterator[Running]:
    """tensorgate serving the MLP over gRPC (the catalog's ``tensorgate``)."""
    yield from _serving(context, "tensorgate")


@pytest.fixture(scope="module")
def rest_gateway(context: Context) -> Iterator[Running]:
    """tensorgate serving the MLP over REST (the catalog's ``tensorgate-rest``)."""
    yield from _serving(context, "tensorgate-rest")
