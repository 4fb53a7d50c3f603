"""The suite's leftover check (``tests/conftest.py``'s ``no_leftovers``) blames only us.

A fresh machine is simulated by a /dev/shm that gains an entry from another tool during the run
(as podman's ``libpod_lock`` appears the first time podman runs): the check must pass; an entry
of ours left behind must still fail it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from tests.support.leftovers import SHM, leaked, shm_entries

REPO = Path(__file__).resolve().parent.parent


def test_a_new_foreign_entry_is_not_ours_but_one_named_as_ours_is(tmp_path: Path) -> None:
    before = shm_entries(str(tmp_path))
    (tmp_path / "libpod_lock").write_bytes(b"")
    (tmp_path / "tensorgate-w0").write_bytes(b"")
    (tmp_path / "psm_1234").write_bytes(b"")
    assert leaked(before, [], str(tmp_path)) == {"tensorgate-w0", "psm_1234"}


def test_an_entry_our_process_holds_is_ours_whatever_its_name(tmp_path: Path) -> None:
    before = shm_entries(str(tmp_path))
    fd = os.open(tmp_path / "odd-name", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        assert leaked(before, [os.getpid()], str(tmp_path)) == {"odd-name"}
    finally:
        os.close(fd)
    assert leaked(before, [os.getpid()], str(tmp_path)) == set()


def _session(tmp_path: Path, entry: str) -> subprocess.CompletedProcess[str]:
    """A pytest session with the suite's fixtures whose one test makes /dev/shm/``entry``."""
    (tmp_path / "leftover_check.py").write_text("from tests.conftest import no_leftovers  # noqa\n")
    test = tmp_path / "test_makes_an_entry.py"
    test.write_text(f"def test_it():\n    open('{SHM}/{entry}', 'wb').close()\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "leftover_check", "-p", "no:cacheprovider",
         f"--rootdir={REPO}", str(test)],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])},
    )  # fmt: skip


def test_the_session_passes_when_another_tool_writes_to_dev_shm(tmp_path: Path) -> None:
    entry = f"libpod_lock-simulated-{uuid.uuid4().hex}"
    try:
        result = _session(tmp_path, entry)
    finally:
        Path(SHM, entry).unlink(missing_ok=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_session_fails_when_we_leave_a_segment(tmp_path: Path) -> None:
    entry = f"tensorgate-leak-{uuid.uuid4().hex}"
    try:
        result = _session(tmp_path, entry)
    finally:
        Path(SHM, entry).unlink(missing_ok=True)
    assert result.returncode != 0
    assert f"shared memory left behind: ['{entry}']" in result.stdout
