"""What processes use, from /proc: CPU seconds (a whole tree, each thread, by role) and memory.

A server under test is a process tree (the gateway and its workers, a peer and its children);
:func:`descendants` finds it, :class:`CpuMeter` sums its CPU between two points, :func:`thread_cpu`
and :func:`cpu_by_role` split it by thread. Processes that are gone count zero.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def parents() -> dict[int, list[int]]:
    """Each live process's children, from every ``/proc/<pid>/stat``'s parent field: a whole
    snapshot (``/proc/<pid>/task/<tid>/children`` can miss a child while others start or exit)."""
    below: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                below.setdefault(ppid, []).append(int(entry))
    return below


def children(pid: int) -> list[int]:
    """The direct children of ``pid``, in pid order."""
    return sorted(parents().get(pid, []))


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    below = parents()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(below.get(p, ()))
    return out


def by_role(pid: int) -> dict[str, list[int]]:
    """The processes below ``pid`` by :func:`role_of`: ``worker`` and ``front end`` lists (the
    gateway's workers; the front ends a supervisor of several runs), in pid order."""
    found: dict[str, list[int]] = {"worker": [], "front end": [], "gateway": []}
    for child in sorted(p for p in descendants(pid) if p != pid):
        found.setdefault(role_of(child), []).append(child)
    return found


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
    return status_bytes(pid, "VmRSS")


def status_bytes(pid: int, field: str) -> int:
    """A memory ``field`` of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``, ...) in bytes (0 if
    the process is gone)."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak(pid: int) -> None:
    """Start ``pid``'s peak resident memory (``VmHWM``) afresh from its present memory (writes
    ``5`` to its ``clear_refs``; nothing when it is gone or not ours)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")


def pss_bytes(pid: int) -> int:
    """Proportional set size of one process in bytes: its private pages and its share of those
    it maps with others (0 if it is gone)."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError, PermissionError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    return 0


def role_of(pid: int) -> str:
    """``front end``, ``worker`` or ``gateway`` (one process, or the supervisor), by command."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if b"gateway.frontend" in argv:
            return "front end"
        if b"workers" in argv:
            return "worker"
    return "gateway"


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
