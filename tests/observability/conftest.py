"""Fixtures of the observability tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway.observability.tracing import Tracing


@pytest.fixture
def made() -> Iterator[list[Tracing]]:
    """Tracing objects a test made, shut down afterwards (each holds an export thread)."""
    tracings: list[Tracing] = []
    yield tracings
    for tracing in tracings:
        tracing.shutdown()
