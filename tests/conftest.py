"""Shared fixtures: a model repository built from scratch and one real gateway for the suite.

Async tests are ``async def test_...``, run by anyio's pytest plugin (``anyio_mode = "auto"`` in
pyproject.toml) on a loop of their own from :func:`anyio_backend`: uvloop, as in the gateway,
able to ``settle()`` (:mod:`tests.support.idle_loop`). Async fixtures share their test's loop.

Property tests (hypothesis) run under a profile chosen by ``HYPOTHESIS_PROFILE``:

- ``ci`` (the default, ``make test``): derandomized, so every run of one commit tries the same
  examples; no example database; 100 examples; no deadline (timing must not decide a result).
- ``long`` (``make test-long``): randomized, 1000 examples a test, no deadline; a failure prints
  the ``@reproduce_failure`` blob to replay it.

Per-test ``@settings`` may change the number of examples, but only relative to the profile's
(``settings.default.max_examples``), and never the other choices above. Hypothesis's caches (and
any database) go to a temporary directory removed at exit, so no run leaves ``.hypothesis/``.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support import onnx_models
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.idle_loop import SettlingLoop, SettlingPolicy
from tests.support.leftovers import children, leaked, shm_entries

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    print_blob=True,
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("long", settings.get_profile("ci"), derandomize=False, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

asyncio.set_event_loop_policy(SettlingPolicy())  # an asyncio.run() a test makes can settle() too

_HYPOTHESIS_HOME: str | None = None
if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
    _HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="tensorgate-hypothesis-")
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = _HYPOTHESIS_HOME
    # At exit, not in pytest_unconfigure: a run that stops on a usage error never configures.
    atexit.register(shutil.rmtree, _HYPOTHESIS_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """Every async test and async fixture: asyncio on a :class:`SettlingLoop` (uvloop), a new
    one for each test."""
    return "asyncio", {"loop_factory": SettlingLoop}


@pytest.fixture(scope="session", autouse=True)
def no_leftovers() -> Iterator[None]:
    """The suite must leave no shared memory of ours, child processes or ``.hypothesis/``
    behind. Other tools' own state in /dev/shm (podman's ``libpod_lock``, created the first
    time it runs) is theirs: :mod:`tests.support.leftovers` tells the two apart."""
    before = shm_entries()
    hypothesis_dir = Path.cwd() / ".hypothesis"
    had_hypothesis_dir = hypothesis_dir.exists()
    yield
    left = leaked(before, [os.getpid()])
    assert not left, f"shared memory left behind: {sorted(left)}"
    left_children = children(os.getpid())
    assert not left_children, f"processes left behind: {left_children}"
    assert had_hypothesis_dir or not hypothesis_dir.exists(), f"{hypothesis_dir} left behind"


@pytest.fixture(scope="session")
def model_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mlp`` (versions 1, 2), ``identities``, ``add_two``, and a config file serving them."""
    root = tmp_path_factory.mktemp("models")
    onnx_models.mlp(root / "mlp" / "1" / "model.onnx", seed=1)
    onnx_models.mlp(root / "mlp" / "2" / "model.onnx", seed=2)
    onnx_models.identities(root / "identities" / "1" / "model.onnx")
    onnx_models.add_two(root / "add_two" / "7" / "model.onnx")
    (root / "models.config").write_text(
        f"""model_config_list {{
  config {{
    name: "mlp"
    base_path: "{root / "mlp"}"
    model_platform: "onnx"
    model_version_policy {{ all {{}} }}
    version_labels {{ key: "stable" value: 1 }}
    version_labels {{ key: "canary" value: 2 }}
  }}
  config {{ name: "identities" base_path: "{root / "identities"}" }}
  config {{ name: "add_two" base_path: "{root / "add_two"}" }}
}}
"""
    )
    return root


@pytest.fixture(scope="session")
def gateway(model_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway (2 workers × 1 thread) serving :func:`model_repo`, shared by read-only tests.
    Its config assigns version labels at start, which TF Serving allows only with
    ``--allow_version_labels_for_unavailable_models``."""
    args = [
        f"--model_config_file={model_repo / 'models.config'}",
        "--allow_version_labels_for_unavailable_models",
        "--workers=2",
        "--tensorflow_intra_op_parallelism=1",
        "--tensorflow_inter_op_parallelism=1",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path_factory.mktemp("logs")) as process:
        yield process
