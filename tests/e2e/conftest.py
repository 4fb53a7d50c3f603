"""Fixtures shared by whole-server test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.tf_compat import Served, serving


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The gateway serving TF Serving's test and documentation SavedModels (one TF worker)."""
    with serving(tmp_path_factory) as server:
        yield server
