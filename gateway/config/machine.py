"""Facts about the machine this process runs on: the CPUs it may keep busy."""

from __future__ import annotations

import math
import os
from pathlib import Path


def available_cpus(
    *, cgroup_root: str | Path = "/sys/fs/cgroup", proc_cgroup: str | Path = "/proc/self/cgroup"
) -> int:
    """CPUs this process may keep busy: its affinity mask, lowered by a cgroup CPU quota.

    The quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``; this is how
    Kubernetes CPU limits arrive) counts as ``floor(quota / period)`` CPUs, at least 1: rounding
    up would let the workers together ask for more CPU time than the limit grants.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpu_quota(Path(cgroup_root), Path(proc_cgroup))
    if quota is not None:
        cpus = min(cpus, max(1, math.floor(quota)))
    return max(1, cpus)


def _cgroup_cpu_quota(root: Path, proc_cgroup: Path) -> float | None:
    """The CPU quota in CPUs of this process's cgroup, or None when unlimited or unreadable."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        lines = []
    candidates: list[tuple[Path, Path | None]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        rel = rel.lstrip("/")
        if controllers == "":
            candidates.append((root / rel / "cpu.max", None))
        elif "cpu" in controllers.split(","):
            base = root / "cpu" / rel
            candidates.append((base / "cpu.cfs_quota_us", base / "cpu.cfs_period_us"))
    candidates.append((root / "cpu.max", None))
    candidates.append((root / "cpu" / "cpu.cfs_quota_us", root / "cpu" / "cpu.cfs_period_us"))
    for quota_file, period_file in candidates:
        try:
            if period_file is None:
                quota_text, _, period_text = quota_file.read_text().strip().partition(" ")
            else:
                quota_text = quota_file.read_text().strip()
                period_text = period_file.read_text().strip()
        except OSError:
            continue
        if quota_text == "max" or quota_text.startswith("-"):
            return None
        try:
            quota, period = int(quota_text), int(period_text or "100000")
        except ValueError:
            continue
        if quota > 0 and period > 0:
            return quota / period
        return None
    return None
