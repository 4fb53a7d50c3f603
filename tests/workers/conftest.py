"""Fixtures of the worker tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.worker_harness import Harness


@pytest.fixture
def fresh() -> Iterator[Harness]:
    """A worker of its own, for tests that stop or kill it."""
    harness = Harness(input_bytes=1 << 16, output_bytes=1 << 16, ring_slots=8)
    try:
        yield harness
    finally:
        harness.close()
