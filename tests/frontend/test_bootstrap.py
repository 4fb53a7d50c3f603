"""Starting a front-end process, up to the point where it would serve: the supervisor's flags are
parsed by the same parser (a mistake is exit status 2, said on stderr), and a front end whose
supervisor is already gone exits 1 before touching its descriptors (in a child process: asking
to die with the parent changes the asking process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.frontend.bootstrap import main

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 60.0
"""Bound of every wait (never reached when things work)."""


def _args(parent_pid: int, *flags: str) -> list[str]:
    ids = ("--slot", "0", "--serial", "1", "--control-fd", "-1", "--load-table-fd", "-1")
    sizes = ("--frontends", "1", "--workers", "1")
    return [*ids, *sizes, "--parent-pid", str(parent_pid), "--", *flags]


def test_a_flag_mistake_is_exit_status_2_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(os.getppid(), "--no_such_flag=1")) == 2
    assert capsys.readouterr().err == (
        "tensorgate front end: unknown flag --no_such_flag; --help lists the flags\n"
    )


def test_a_front_end_whose_supervisor_is_gone_exits_1() -> None:
    not_its_parent = os.getppid()  # the child's parent is this process, not ours
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gateway.frontend",
            *_args(not_its_parent, "--model_name=m", f"--model_base_path={ROOT}"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=WAIT_S,
    )
    assert done.returncode == 1
    assert f"supervisor {not_its_parent} exited before front end 0 started" in done.stderr
