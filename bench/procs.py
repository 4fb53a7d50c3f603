"""Processes under test: start (pinned, logged, ready-checked), account CPU and memory, stop.

Readiness: a server that speaks the ``--ready_fd`` handshake (tensorgate, the bench echo server)
writes one JSON line to an inherited pipe when it serves; the harness blocks on that pipe with a
bounded wait. Peers without such a hook (uvicorn, MLServer) are polled on their readiness URL,
bounded in time. Every process is started in its own session and stopped by process group, so
workers and pool children go with it.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gateway.app import wait_ready

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
GROUP_GRACE_S = 5.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


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
    extra_ports: dict[str, int] = field(default_factory=dict)
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


def pinned(argv: Sequence[str], cpus: Sequence[int]) -> list[str]:
    """``argv`` run under ``taskset -c`` when ``cpus`` is given (children inherit the mask)."""
    if not cpus:
        return list(argv)
    return ["taskset", "-c", ",".join(str(c) for c in cpus), *argv]


def free_port() -> int:
    """An unused local TCP port (for peers that cannot report the port they bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


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
    ready_url: str,
    port: int,
    *,
    cpus: Sequence[int] = (),
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> Server:
    """Start ``argv`` and poll ``ready_url`` (HTTP 200) every 0.1 s for at most ``timeout_s``."""
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
    server = Server(name, process, log_path, port)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(ready_url, timeout=1.0) as resp:
                if resp.status == 200:
                    return server
        except (OSError, http.client.HTTPException):
            pass  # not listening yet, or something else answers on the port: not ready
        time.sleep(0.1)  # polling a peer that has no readiness hook; bounded by the deadline
    server.stop()
    raise StartFailed(f"{name} did not become ready", server.log_tail(), process.returncode)


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for task in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(FileNotFoundError):
                    text = Path(f"/proc/{p}/task/{task}/children").read_text()
                    todo.extend(int(c) for c in text.split())
    return out


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds used so far by ``pids`` (processes that are gone count 0)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / CLK_TCK


def rss_bytes(pid: int) -> int:
    """Resident set size of one process in bytes (0 if it is gone)."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class CpuMeter:
    """CPU seconds used by a server's whole process tree between :meth:`start` and :meth:`stop`."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self._pids: list[int] = []
        self._before = 0.0

    def start(self) -> None:
        self._pids = descendants(self.root_pid)
        self._before = cpu_seconds(self._pids)

    def stop(self) -> float:
        return cpu_seconds(self._pids) - self._before


def thread_cpu(pids: list[int]) -> dict[tuple[int, int, str], float]:
    """CPU seconds so far of every thread of ``pids``: ``(pid, tid, thread name)`` → seconds."""
    out: dict[tuple[int, int, str], float] = {}
    for pid in pids:
        task_dir = Path(f"/proc/{pid}/task")
        try:
            tids = [int(t) for t in os.listdir(task_dir)]
        except FileNotFoundError:
            continue
        for tid in tids:
            try:
                text = (task_dir / str(tid) / "stat").read_text()
            except FileNotFoundError:
                continue
            name = text[text.index("(") + 1 : text.rindex(")")]
            fields = text.rsplit(")", 1)[1].split()
            out[(pid, tid, name)] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    return out


CPU_ROLES = ("gateway loop", "gateway threads", "gRPC threads", "workers")
"""What :func:`cpu_by_role` splits a server tree's CPU into: the root process's main thread (the
event loop), its other Python threads (the worker links' readers, the span export thread), its
gRPC core threads (every thread not named ``python``), and its child processes (the workers)."""


def cpu_by_role(
    before: dict[tuple[int, int, str], float],
    after: dict[tuple[int, int, str], float],
    root_pid: int,
) -> dict[str, float]:
    """CPU seconds per :data:`CPU_ROLES` role between two :func:`thread_cpu` snapshots of a
    tree rooted at ``root_pid`` (a thread seen only in ``after`` counts from zero)."""
    out = dict.fromkeys(CPU_ROLES, 0.0)
    for (pid, tid, name), seconds in after.items():
        used = seconds - before.get((pid, tid, name), 0.0)
        if pid != root_pid:
            role = "workers"
        elif tid == pid:
            role = "gateway loop"
        else:
            role = "gateway threads" if name == "python" else "gRPC threads"
        out[role] += used
    return out
