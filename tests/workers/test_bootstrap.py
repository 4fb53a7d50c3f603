"""Starting a worker process: its command line, its environment, its signals, and its parent.

Real worker processes (``python -m workers``) over real channels."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from channel.shm.channel import Channel
from tests.support.waits import until
from tests.support.worker_harness import WAIT_S, Harness
from workers.bootstrap import THREAD_ENV, spawn_worker, worker_argv


def test_argv_names_the_channels_descriptors_and_the_parent() -> None:
    with Channel.create(index=4, input_bytes=4096, output_bytes=4096) as channel:
        memfd, submit_fd, complete_fd, release_fd = channel.fds
        argv = worker_argv(channel, parent_pid=77, log_level="DEBUG", log_format="json")
    assert argv == [
        *("--index", "4", "--memfd", str(memfd)),
        *("--submit-fd", str(submit_fd), "--complete-fd", str(complete_fd)),
        *("--release-fd", str(release_fd), "--parent-pid", "77"),
        *("--log-level", "DEBUG", "--log-format", "json"),
    ]


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def test_a_spawned_worker_gets_the_given_environment_with_one_thread_per_library() -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "8", "TENSORGATE_TEST_MARK": "kept"}
    with Channel.create(index=0, input_bytes=4096, output_bytes=4096) as channel:
        proc = spawn_worker(channel, log_level="WARNING", env=env)
        try:
            assert select.select([channel.complete_fd], [], [], WAIT_S)[0], "never ready"
            environ = _environ(proc.pid)  # the worker's own, read once it is up
        finally:
            proc.kill()
            proc.wait(WAIT_S)
    assert environ["TENSORGATE_TEST_MARK"] == "kept"
    assert {name: environ[name] for name in THREAD_ENV} == THREAD_ENV
    assert env["OMP_NUM_THREADS"] == "8"  # the caller's mapping is not changed


def test_a_bad_command_line_exits_two_before_anything_starts() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "workers", "--index", "0"],
        capture_output=True,
        timeout=WAIT_S,
        check=False,
    )
    assert proc.returncode == 2
    assert b"the following arguments are required: --memfd" in proc.stderr


def test_sigterm_while_idle_exits_zero(fresh: Harness) -> None:
    fresh.proc.send_signal(signal.SIGTERM)
    assert fresh.proc.wait(WAIT_S) == 0


def test_sigint_is_ignored(fresh: Harness) -> None:
    fresh.proc.send_signal(signal.SIGINT)
    assert fresh.ping()["ok"]


def test_worker_refuses_to_start_without_its_parent() -> None:
    with Channel.create(index=0, input_bytes=4096, output_bytes=4096) as channel:
        argv = worker_argv(channel, parent_pid=1)  # not our parent: as if re-parented already
        proc = subprocess.Popen(
            [sys.executable, "-m", "workers", *argv],
            pass_fds=channel.fds,
            stderr=subprocess.PIPE,
        )
        _, err = proc.communicate(timeout=WAIT_S)
        assert proc.returncode == 1
        assert b"exited before the worker started" in err


_PARENT = textwrap.dedent(
    """
    import select, sys
    from workers.bootstrap import spawn_worker
    from channel.messages import decode_reply
    from channel.shm.channel import Channel

    channel = Channel.create(index=0, input_bytes=4096, output_bytes=4096)
    worker = spawn_worker(channel, log_level="WARNING")
    select.select([channel.complete_fd], [], [], 30)
    assert decode_reply(channel.completions()[0])["op"] == "ready"
    print(worker.pid, flush=True)
    sys.stdin.read()  # until the test kills us
    """
)


@pytest.fixture
def subreaper() -> Iterator[None]:
    """Orphans re-parent to this process while the test runs, so it can reap them."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_child_subreaper = 36
    assert libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
    try:
        yield
    finally:
        libc.prctl(pr_set_child_subreaper, 0, 0, 0, 0)


def _reap(pid: int, timeout: float) -> int | None:
    """Wait status of ``pid`` (a child of ours), or None if it is still running after
    ``timeout`` seconds (bounded poll)."""
    statuses: list[int] = []

    def reaped() -> bool:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            statuses.append(status)
        return bool(done)

    with contextlib.suppress(AssertionError):
        until(reaped, f"worker {pid} exiting", timeout)
    return statuses[0] if statuses else None


@pytest.mark.usefixtures("subreaper")
def test_worker_dies_with_its_parent() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None
        worker_pid = int(parent.stdout.readline())
        parent.kill()
        parent.wait(WAIT_S)
        status = _reap(worker_pid, WAIT_S)
        if status is None:
            os.kill(worker_pid, signal.SIGKILL)
            os.waitpid(worker_pid, 0)
        assert status is not None and os.WIFSIGNALED(status)
        assert os.WTERMSIG(status) == signal.SIGKILL
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.communicate()
