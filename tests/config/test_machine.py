"""The CPUs this process may keep busy: its affinity mask lowered by a cgroup quota (v1, v2)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.config.machine import available_cpus


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as path:
        yield Path(path)


def _fake_cgroup(root: Path, proc_line: str, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    proc = root / "proc_self_cgroup"
    proc.write_text(proc_line + "\n")
    return proc


@pytest.mark.parametrize(
    ("proc_line", "files", "quota_cpus"),
    [
        ("0::/pod", {"pod/cpu.max": "150000 100000\n"}, 1),
        ("0::/", {"cpu.max": "max 100000\n"}, None),
        ("0::/", {"cpu.max": "50000 100000\n"}, 1),
        (
            "4:cpu,cpuacct:/",
            {"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"},
            None,
        ),
        (
            "4:cpu,cpuacct:/k",
            {"cpu/k/cpu.cfs_quota_us": "100000", "cpu/k/cpu.cfs_period_us": "100000"},
            1,
        ),
        ("0::/", {}, None),
    ],
)
def test_available_cpus_honours_cgroup_quota(
    workdir: Path, proc_line: str, files: dict[str, str], quota_cpus: int | None
) -> None:
    proc = _fake_cgroup(workdir, proc_line, files)
    affinity = len(os.sched_getaffinity(0))
    expected = affinity if quota_cpus is None else min(affinity, quota_cpus)
    assert available_cpus(cgroup_root=workdir, proc_cgroup=proc) == expected


@pytest.mark.parametrize(
    ("files", "quota_cpus"),
    [
        ({"cpu.max": "250000\n"}, 2),  # no period: 100000 microseconds
        ({"cpu.max": "0 100000\n"}, None),  # not a quota
        ({"cpu.max": "lots 100000\n"}, None),  # unreadable, and nothing else to read
    ],
)
def test_odd_quota_files(workdir: Path, files: dict[str, str], quota_cpus: int | None) -> None:
    proc = _fake_cgroup(workdir, "0::/", files)
    affinity = len(os.sched_getaffinity(0))
    expected = affinity if quota_cpus is None else min(affinity, quota_cpus)
    assert available_cpus(cgroup_root=workdir, proc_cgroup=proc) == expected


def test_an_unreadable_proc_file_falls_back_to_the_root_cgroup(workdir: Path) -> None:
    (workdir / "cpu.max").write_text("100000 100000\n")
    assert available_cpus(cgroup_root=workdir, proc_cgroup=workdir / "missing") == 1
