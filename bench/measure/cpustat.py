"""How busy given CPUs were between two points, from ``/proc/stat``: the noise around a point.

A server pinned to one CPU is measured alone only if nothing else ran there. :func:`sample` reads
the per-CPU counters; :func:`busy_cores` turns two samples into the busy fraction and the steal
of the named CPUs, so a run can subtract what it knows it used (the server tree's CPU) and report
what others took ("foreign" CPU: other engineers' tests, the hypervisor).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
_BUSY = (0, 1, 2, 5, 6, 7)
"""user, nice, system, irq, softirq, steal (of: user nice system idle iowait irq softirq steal)."""
_STEAL = 7

Sample = dict[int, tuple[float, float]]
"""CPU number → (busy seconds, steal seconds) since boot."""


def parse(text: str) -> Sample:
    """The per-CPU lines of a ``/proc/stat`` text."""
    out: Sample = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        fields = [int(f) for f in rest.split()]
        busy = sum(fields[i] for i in _BUSY if i < len(fields))
        steal = fields[_STEAL] if len(fields) > _STEAL else 0
        out[int(name[3:])] = (busy / CLK_TCK, steal / CLK_TCK)
    return out


def sample() -> Sample:
    return parse(Path("/proc/stat").read_text())


def busy_cores(
    before: Sample, after: Sample, cpus: Sequence[int], wall_s: float
) -> tuple[float, float]:
    """``(busy, steal)`` of ``cpus`` between two samples, in cores (busy includes steal)."""
    if wall_s <= 0:
        return 0.0, 0.0
    busy = sum(after[c][0] - before[c][0] for c in cpus if c in before and c in after)
    steal = sum(after[c][1] - before[c][1] for c in cpus if c in before and c in after)
    return busy / wall_s, steal / wall_s
