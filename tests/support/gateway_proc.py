"""A real gateway in its own process on an OS-chosen port, stopped by PID when done.

Readiness is reported by the gateway itself over an inherited pipe (``--ready_fd``): the test blocks
on that pipe (bounded), never sleeps and string-matches logs.

A gateway is one process (``--frontends=1``) unless the test asks for front ends
(``tests/e2e/test_frontends.py``): most whole-server tests observe the one-process shape (its
children are the workers). ``TENSORGATE_TEST_FRONTENDS=N`` runs them with N front ends instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.lifecycle import wait_ready
from tests.support.leftovers import children, held_files, leaked, shm_entries

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0


class GatewayFailed(RuntimeError):
    """The gateway exited or did not report ready; the message carries its log."""


@dataclass
class GatewayProcess:
    process: subprocess.Popen[bytes]
    grpc_port: int
    log_path: Path
    rest_port: int = 0
    ready_info: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """What the gateway wrote to ``--ready_fd`` (its own ``pid``, ``grpc_port``, ``rest_port``)."""

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig`` and wait (bounded) for the exit code; SIGKILL if it hangs."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise GatewayFailed(f"gateway did not stop on {sig!r}:\n{self.log()}") from None


def gateway_command(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "gateway", *args]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``tensorgate <args>`` to completion (start-up failures, --help), bounded."""
    return subprocess.run(
        gateway_command(args), capture_output=True, text=True, timeout=120, check=False
    )


def start_gateway(
    args: Sequence[str],
    log_dir: Path,
    *,
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> GatewayProcess:
    """Start ``tensorgate <args> --port=0 --ready_fd=N`` and wait until it reports ready.

    ``command`` replaces ``python -m gateway`` (e.g. the container image's entry point script, which
    must end up running the gateway with the arguments appended); ``env`` replaces the environment.
    """
    read_fd, write_fd = os.pipe()
    log_path = Path(tempfile.mkstemp(prefix="gateway-", suffix=".log", dir=log_dir)[1])
    flags = [*args, f"--ready_fd={write_fd}"]
    if not any(a.startswith("--port") for a in args):
        flags.append("--port=0")
    if not any(a.startswith("--frontends") for a in args):
        flags.append(f"--frontends={os.environ.get('TENSORGATE_TEST_FRONTENDS', '1')}")
    argv = gateway_command(flags) if command is None else [*command, *flags]
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            argv,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            pass_fds=(write_fd,),
            env=None if env is None else dict(env),
        )
    os.close(write_fd)
    try:
        info = wait_ready(read_fd, START_TIMEOUT_S)
    finally:
        os.close(read_fd)
    if info is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()
        raise GatewayFailed(f"gateway did not become ready:\n{log_path.read_text()}")
    return GatewayProcess(process, int(info["grpc_port"]), log_path, int(info["rest_port"]), info)


@contextlib.contextmanager
def running_gateway(
    args: Sequence[str], log_dir: Path, env: Mapping[str, str] | None = None
) -> Iterator[GatewayProcess]:
    gateway = start_gateway(args, log_dir, env=env)
    try:
        yield gateway
    finally:
        code = gateway.stop()
        if code not in (0, -signal.SIGKILL):
            raise GatewayFailed(f"gateway exited with {code}:\n{gateway.log()}")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def worker_pids(pid: int) -> list[int]:
    """The gateway ``pid``'s worker processes (one process or a supervisor alike)."""
    return [p for p in children(pid) if "-m workers" in _cmdline(p)]


def front_end_pids(pid: int) -> list[int]:
    """The supervisor ``pid``'s front-end processes, by slot (none: one process)."""
    found = [p for p in children(pid) if "-m gateway.frontend" in _cmdline(p)]
    return sorted(found, key=lambda p: int(_cmdline(p).split("--slot ")[1].split()[0]))


def wait_gone(pid: int, timeout_s: float = 30.0) -> bool:
    """Wait (bounded, via pidfd) until ``pid`` no longer exists; True if it is gone."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        return bool(ready)
    finally:
        os.close(fd)


def assert_sigkill_leaves_nothing(gateway: GatewayProcess, children: list[int]) -> None:
    """SIGKILL ``gateway``: every one of its ``children`` ends by itself, and no process holds or
    maps any of the tree's memfd segments afterwards (so the kernel freed them), nor is anything
    left in /dev/shm by us (:mod:`tests.support.leftovers`)."""
    shm_before = shm_entries()
    segments = memfd_inodes([gateway.pid, *children])
    assert segments, "the channels are memfd segments"
    try:
        gateway.stop(signal.SIGKILL)
        for pid in children:
            assert wait_gone(pid), f"{pid} outlived its parent"
    finally:
        for pid in children:
            kill_quietly(pid)
    assert memfds_still_held(segments) == set()
    assert leaked(shm_before, [os.getpid()]) == set()


def memfd_inodes(pids: list[int]) -> set[int]:
    """The inodes of the anonymous ``memfd`` segments that ``pids`` hold open or map."""
    found = set()
    for pid in pids:
        found |= _memfds_of(pid)
    return found


def memfds_still_held(inodes: set[int]) -> set[int]:
    """Which of ``inodes`` (``memfd`` segments) any process on the machine still holds open or
    maps: a segment is freed by the kernel once none does, so an empty set proves nothing is left
    (a ``/dev/shm`` listing cannot: a memfd never appears there)."""
    held: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            held |= _memfds_of(int(entry)) & inodes
    return held


def _memfds_of(pid: int) -> set[int]:
    return {inode for path, inode in held_files(pid) if path.startswith("/memfd:")}


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
