"""Processes under test: start (pinned, logged, ready-checked) and stop.

Readiness: a server that speaks the ``--ready_fd`` handshake (tensorgate, the bench echo server)
writes one JSON line to an inherited pipe when it serves; the harness blocks on that pipe with a
bounded wait. Peers without such a hook (uvicorn, MLServer, KServe) listen on port 0 and are
polled, bounded in time, until one of their ports answers their readiness URL. Every process is
started in its own session and stopped by process group, so workers and pool children go with it.
What they use (CPU, memory) is :mod:`bench.measure.usage`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.cpus import pinned
from bench.systems.listening import http_status, listening_ports
from gateway.lifecycle import wait_ready

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
GROUP_GRACE_S = 5.0


class StartFailed(RuntimeError):
    """A server exited or did not become ready; ``log`` holds the tail of its output."""

    def __init__(self, message: str, log: str = "", exit_code: int | None = None) -> None:
        super().__init__(message)
        self.log = log
        self.exit_code = exit_code


@dataclass
class Server:
    """A running server process (and its descendants)."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    port: int
    remove_after: tuple[Path, ...] = ()
    """Directories the server works in, removed once it has stopped."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

    def stop(self) -> int | None:
        """Stop the server and everything it started. Idempotent.

        SIGTERM to the leader first, so the server shuts its own children down in order (worker
        pools release their semaphores); then SIGTERM to what is left of the process group,
        then SIGKILL — each step bounded in time.
        """
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(STOP_TIMEOUT_S)
        for sig, grace_s in ((signal.SIGTERM, GROUP_GRACE_S), (signal.SIGKILL, 0.0)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break  # the group is empty
            _wait_group_gone(self.process.pid, grace_s)
        for path in self.remove_after:
            shutil.rmtree(path, ignore_errors=True)
        return self.process.wait()


def _wait_group_gone(pgid: int, timeout_s: float) -> None:
    """Wait (polling, bounded) until process group ``pgid`` has no members left."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def start_with_ready_fd(
    name: str,
    argv: Sequence[str],
    log_path: Path,
    *,
    cpus: Sequence[int] = (),
    env: dict[str, str] | None = None,
    ready_flag: str = "--ready_fd",
) -> tuple[Server, dict[str, object]]:
    """Start ``argv + [ready_flag=N]``; wait for its JSON ready line; return it with the line.

    Raises StartFailed (with the log and exit code) if the process exits or stays silent for
    ``START_TIMEOUT_S``.
    """
    read_fd, write_fd = os.pipe()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            pinned([*argv, f"{ready_flag}={write_fd}"], cpus),
            stdout=log,
            stderr=subprocess.STDOUT,
            pass_fds=(write_fd,),
            env=env,
            start_new_session=True,
        )
    os.close(write_fd)
    try:
        info = wait_ready(read_fd, START_TIMEOUT_S)
    finally:
        os.close(read_fd)
    server = Server(name, process, log_path, 0)
    if info is None:
        server.stop()
        raise StartFailed(f"{name} did not become ready", server.log_tail(), process.returncode)
    server.port = int(str(info.get("grpc_port", info.get("port", 0))))
    return server, info


def start_polled(
    name: str,
    argv: Sequence[str],
    log_path: Path,
    ready_path: str,
    *,
    listens: int = 1,
    cpus: Sequence[int] = (),
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> tuple[Server, set[int]]:
    """Start ``argv`` (its servers on port 0) and poll every 0.1 s, for at most ``timeout_s``,
    until it listens on ``listens`` ports and one of them answers ``GET ready_path`` with 200.

    Returns the server (its ``port``: the one that answered) and the ports it listens on.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            pinned(argv, cpus),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    server = Server(name, process, log_path, 0)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        ports = listening_ports(process.pid)
        if len(ports) >= listens:
            for port in sorted(ports):
                if http_status(port, ready_path) == 200:
                    server.port = port
                    return server, ports
        time.sleep(0.1)  # polling a peer that has no readiness hook; bounded by the deadline
    server.stop()
    raise StartFailed(f"{name} did not become ready", server.log_tail(), process.returncode)
