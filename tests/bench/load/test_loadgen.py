"""bench.load.loadgen without processes: the work split, step schedules, option checks."""

from __future__ import annotations

import pytest

from bench.load.loadgen import LoadOptions, StepSchedule, split, user_offsets


def options(**kw: object) -> LoadOptions:
    base: dict[str, object] = {"target": "127.0.0.1:1", "method": "/a.B/C", "payload": b"x"}
    base.update(kw)
    return LoadOptions(**base)  # type: ignore[arg-type]


def test_split_spreads_users_connections_and_total() -> None:
    shares = split(options(concurrency=5, connections=3, total=11, processes=2))
    assert [len(s.users) for s in shares] == [3, 2]
    assert [s.connections for s in shares] == [2, 1]
    assert [s.total for s in shares] == [6, 5]
    assert all(s.rate == 0 for s in shares)


def test_split_drops_processes_without_users() -> None:
    assert len(split(options(concurrency=2, processes=4, duration_s=1))) == 2


def test_split_open_loop_interleaves_phases() -> None:
    shares = split(options(rps=1000, processes=4, duration_s=1))
    assert [s.rate for s in shares] == [250] * 4
    assert [s.phase_s for s in shares] == pytest.approx([0, 0.001, 0.002, 0.003])
    assert all(not s.users for s in shares)


def test_step_schedule_adds_users_at_the_given_pace() -> None:
    offsets = user_offsets(6, StepSchedule(start=2, step=2, step_duration_s=1.5))
    assert offsets == [0.0, 0.0, 1.5, 1.5, 3.0, 3.0]
    assert user_offsets(3, None) == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="step schedule"):
        user_offsets(3, StepSchedule(start=0))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"concurrency": 0, "total": 1}, "concurrency"),
        ({}, "total"),
        ({"total": 5, "warmup_s": 1.0}, "warmup"),
        ({"total": 5, "transport": "udp"}, "transport"),
        ({"total": 5, "processes": 0}, "processes"),
    ],
)
def test_validate(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        options(**kw).validate()
