"""The channel's stress test (tests/channel/shm/stress.py) on this machine: its two ends in two
processes, every byte checked. ``make test-image`` runs the same inside the arm64 image."""

from __future__ import annotations

import subprocess
import sys

from tests.channel.shm import stress


def test_two_processes_exchange_runs_without_a_wrong_byte_or_a_lost_wake_up() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.channel.shm.stress", "--runs=3000"],
        cwd=stress.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("3000 runs in "), done.stdout
