"""The client tests' scripted server (:mod:`tests.client.scripted`) as a fixture."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client.scripted import Scripted, scripted_server


@pytest.fixture
def scripted() -> Iterator[tuple[str, Scripted]]:
    """A scripted server on an OS-chosen port: ``(target, servicer)``."""
    with scripted_server() as server:
        yield server
