"""The machine's CPUs as the bench splits them between the servers under test and the client.

Layouts on a 2-core machine: ``1-core`` pins every server process to CPU 1 and the load generator
to CPU 0 (the tightest comparisons: the server has exactly one core, the client never steals
it); ``2-core`` leaves both unpinned (servers with two workers; the client shares the cores and
its CPU use is recorded). On a machine with one CPU nothing is pinned. A process is pinned by
running it under ``taskset`` (its children inherit the mask).
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def layouts() -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Layout name → ``(server CPUs, client CPUs)`` (empty: not pinned)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return {"1-core": ((), ()), "2-core": ((), ())}
    return {"1-core": ((cpus[1],), (cpus[0],)), "2-core": ((), ())}


def pinned(argv: Sequence[str], cpus: Sequence[int]) -> list[str]:
    """``argv`` run under ``taskset -c`` when ``cpus`` is given (children inherit the mask)."""
    if not cpus:
        return list(argv)
    return ["taskset", "-c", ",".join(str(c) for c in cpus), *argv]
