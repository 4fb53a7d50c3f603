"""The tools and packages that ``make test`` installs (``make system-deps``: prometheus, promtool,
kubectl, chromium, h2load; ``make venv``: tensorflow, tensorflow-serving-api, tritonclient), for
the tests that drive them.

Where one is missing, the test skips and names how to install it. Under ``make test``, which
installs them all and sets ``TENSORGATE_REQUIRE_TOOLS=1``, a missing one fails the test instead:
CI cannot pass by skipping.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import NoReturn

import pytest

REQUIRE_TOOLS = "TENSORGATE_REQUIRE_TOOLS"
SYSTEM_DEPS = "`make system-deps` installs it"
VENV = "`make venv` installs it"


def executable(name: str, install: str = SYSTEM_DEPS) -> str:
    """The path of the ``name`` executable."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} is not installed ({install})")
    return path


def package(name: str, install: str = VENV) -> None:
    """Return once the Python package ``name`` can be imported."""
    if importlib.util.find_spec(name) is None:
        missing(f"the Python package {name} is not installed ({install})")


def missing(what: str) -> NoReturn:
    """Skip the test for ``what`` is missing, or fail it under ``make test``."""
    if os.environ.get(REQUIRE_TOOLS) == "1":
        pytest.fail(
            f"{what}; `make test` installs it, so here ({REQUIRE_TOOLS}=1) it must be there"
        )
    pytest.skip(what)
