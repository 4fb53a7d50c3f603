"""bench.cpus: which CPUs the servers and the client get, and argv under taskset."""

from __future__ import annotations

import os

import pytest

from bench.cpus import layouts, pinned


def test_one_core_layout_gives_the_server_the_second_cpu_and_the_client_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 1, 2})
    assert layouts() == {"1-core": ((2,), (1,)), "2-core": ((), ())}


def test_nothing_is_pinned_on_one_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert layouts() == {"1-core": ((), ()), "2-core": ((), ())}


def test_pinned_runs_argv_under_taskset_only_when_cpus_are_given() -> None:
    assert pinned(["h2load", "-c", "4"], (0, 2)) == ["taskset", "-c", "0,2", "h2load", "-c", "4"]
    assert pinned(("python", "-m", "gateway"), ()) == ["python", "-m", "gateway"]
