"""What the gateway runs on: the CPUs it may use (affinity, cgroup quota) and the worker/thread
split that fits them."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.config.platform import available_cpus, resolve_frontends, resolve_worker_threads
from gateway.config.settings import Settings
from gateway.config.validation import SettingsError


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as path:
        yield Path(path)


def _threads(cpus: int, **flags: Any) -> tuple[int, int, int]:
    return resolve_worker_threads(Settings(model_base_path="/m", **flags), cpus=cpus)


def test_auto_is_one_single_threaded_worker_per_cpu() -> None:
    assert _threads(1) == (1, 1, 1)
    assert _threads(2) == (2, 1, 1)
    assert _threads(16) == (16, 1, 1)


def test_explicit_counts_fill_the_rest() -> None:
    assert _threads(8, tensorflow_intra_op_parallelism=2) == (4, 2, 1)
    assert _threads(8, tensorflow_intra_op_parallelism=3) == (2, 3, 1)
    assert _threads(8, workers=3) == (3, 2, 1)
    assert _threads(8, workers=2, tensorflow_inter_op_parallelism=2) == (2, 4, 2)
    assert _threads(8, tensorflow_session_parallelism=4) == (2, 4, 4)
    assert _threads(8, tensorflow_session_parallelism=4, tensorflow_inter_op_parallelism=1) == (
        8,
        1,
        1,
    )


def test_explicit_oversubscription_is_honoured_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.config.platform"):
        assert _threads(2, workers=4, tensorflow_intra_op_parallelism=2) == (4, 2, 1)
    assert "oversubscribed" in caplog.text


@given(
    cpus=st.integers(1, 512),
    workers=st.integers(0, 64),
    intra=st.integers(0, 64),
    session=st.integers(0, 64),
)
def test_auto_derivation_never_oversubscribes(
    cpus: int, workers: int, intra: int, session: int
) -> None:
    got_workers, got_intra, got_inter = _threads(
        cpus,
        workers=workers,
        tensorflow_intra_op_parallelism=intra,
        tensorflow_session_parallelism=session,
    )
    wanted_intra = intra or session
    assert got_workers >= 1 and got_intra >= 1 and got_inter >= 1
    if workers:
        assert got_workers == workers
    if wanted_intra:
        assert got_intra == wanted_intra
    explicit_fits = workers <= cpus and wanted_intra <= cpus and workers * wanted_intra <= cpus
    if (workers == 0 or wanted_intra == 0) and explicit_fits:
        assert got_workers * got_intra <= cpus
    if workers == 0 and wanted_intra == 0:
        assert (got_workers, got_intra) == (cpus, 1)


def test_default_cpu_count_comes_from_the_machine() -> None:
    workers, intra, _ = resolve_worker_threads(Settings(model_base_path="/m"))
    assert workers * intra == available_cpus()


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


def test_a_cpu_budget_below_one_is_refused() -> None:
    with pytest.raises(SettingsError, match="cpus must be >= 1, got 0"):
        _threads(0)


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


@pytest.mark.parametrize(
    ("cpus", "flags", "expected"),
    [
        (1, {}, 1),  # one process, as before
        (2, {}, 2),
        (4, {}, 4),
        (8, {}, 8),
        (16, {}, 4),  # 16 workers: 64 channels at most
        (16, {"workers": 4}, 8),  # at most 8
        (64, {"tensorflow_intra_op_parallelism": 8}, 8),  # 8 workers of 8 threads
        (2, {"workers": 64}, 2),  # at least 2 on two CPUs
        (8, {"frontends": 3}, 3),  # as given
        (1, {"frontends": 2}, 2),
    ],
)
def test_front_ends_per_cpu_bounded_by_the_channels(
    cpus: int, flags: dict[str, int], expected: int
) -> None:
    settings = Settings(model_base_path="/m", **flags)  # type: ignore[arg-type]
    assert resolve_frontends(settings, cpus=cpus) == expected
