"""What a test run may leave behind, told apart from what other tools leave.

``/dev/shm`` is shared by every program on the machine, and some write there on their own
schedule: podman creates ``/dev/shm/libpod_lock`` the first time it runs on a machine (so a
before/after listing around the image tests differs on a fresh machine only). A leak check
therefore looks only at what can be ours:

- entries named as the segments this project or Python's ``multiprocessing`` name them
  (:data:`OUR_PREFIXES`) that appeared during the run;
- any ``/dev/shm`` entry that one of our processes (the test runner, whatever it started) still
  holds open or maps, whatever its name.

tensorgate itself names none (its segments are anonymous memfds, checked by
:func:`tests.support.gateway_proc.memfds_still_held`): a hit is a regression.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator

SHM = "/dev/shm"
OUR_PREFIXES = ("tensorgate", "psm_", "sem.mp-", "mp-")
"""Names of segments we could create: ours, ``multiprocessing.shared_memory``'s, and
``multiprocessing``'s named semaphores."""


def children(pid: int) -> list[int]:
    """The live direct children of ``pid``, in pid order, from every ``/proc/<pid>/stat``'s
    parent field (``/proc/<pid>/task/<tid>/children`` can miss a child while others start or
    exit)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
                if ppid == pid:
                    found.append(int(entry))
    return sorted(found)


def shm_entries(root: str = SHM) -> set[str]:
    return set(os.listdir(root))


def ours(names: Iterable[str]) -> set[str]:
    """The ``names`` that are segments we could have created."""
    return {n for n in names if n.startswith(OUR_PREFIXES)}


def held_files(pid: int) -> Iterator[tuple[str, int]]:
    """(path, inode) of each file ``pid`` holds open or maps, ``" (deleted)"`` cut off the path
    (nothing for a process that is gone)."""
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = f"/proc/{pid}/fd/{fd}"
            with contextlib.suppress(OSError):
                target, inode = os.readlink(link), os.stat(link).st_ino
                yield target.removesuffix(" (deleted)"), inode
    with contextlib.suppress(OSError), open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6:
                yield fields[5].rstrip("\n").removesuffix(" (deleted)"), int(fields[4])


def held_by(pids: Iterable[int], root: str = SHM) -> set[str]:
    """The entries of ``root`` that any of ``pids`` holds open or maps."""
    prefix = root.rstrip("/") + "/"
    return {
        path[len(prefix) :]
        for pid in pids
        for path, _ in held_files(pid)
        if path.startswith(prefix)
    }


def leaked(before: set[str], pids: Iterable[int], root: str = SHM) -> set[str]:
    """What we left in ``root`` since the listing ``before``: new entries named as ours, and
    entries ``pids`` (our processes) still hold; never another tool's new entry."""
    return ours(shm_entries(root) - before) | held_by(pids, root)
