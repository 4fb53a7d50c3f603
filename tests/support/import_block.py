"""An environment in which some packages cannot be imported, for processes started from a test.

:func:`blocked_env` writes, under a directory of the test's, one package per blocked name whose
``__init__`` raises ``ModuleNotFoundError``, and returns the environment with that directory first
on ``PYTHONPATH``: ``import tensorflow`` in any process started with it fails as in an install
without TensorFlow, while the test's own process keeps its packages.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.paths import REPO_ROOT


def blocked_env(root: Path, *packages: str) -> dict[str, str]:
    """``os.environ`` with ``packages`` made unimportable (shadows written under ``root``) and
    the repository importable."""
    for name in packages:
        package = root / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r} (blocked by the test)'!r})\n"
        )
    path = [str(root), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
