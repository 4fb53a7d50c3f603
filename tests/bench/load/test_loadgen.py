"""bench.load.loadgen / ghz_report without processes: work split, schedules, the report's fields."""

from __future__ import annotations

import pytest

from bench.load.ghz_report import PERCENTAGES, build_report, ghz_histogram, summary_text
from bench.load.histogram import Histogram
from bench.load.loadgen import LoadOptions, StepSchedule, split, user_offsets
from bench.load.loadgen_worker import Part, Recorder

S = 1_000_000_000


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


def test_recorder_counts_only_the_window_but_keeps_the_timeline() -> None:
    rec = Recorder(start_ns=0, warm_ns=1 * S, end_ns=3 * S, per_second_latency=True)
    rec.add(0, S // 2, "OK", "")  # warmup: timeline only
    rec.add(S, S + 2_000_000, "OK", "")
    rec.add(2 * S, 2 * S + 5_000_000, "Unavailable", "rpc error: code = Unavailable desc = full")
    rec.add(3 * S, 3 * S + 1, "OK", "")  # after the window
    part = rec.part
    assert part.statuses == {"OK": 1, "Unavailable": 1}
    assert part.errors == {"rpc error: code = Unavailable desc = full": 1}
    assert part.latency.count == 1
    assert part.timeline == {0: [1, 0], 1: [1, 0], 2: [1, 1], 3: [1, 0]}
    assert Part.from_dict(part.to_dict()).timeline == part.timeline


def test_report_has_ghz_fields_in_nanoseconds() -> None:
    part = Part()
    for ms in range(1, 101):
        part.latency.record(ms * 1_000_000)
    part.statuses = {"OK": 100, "Unavailable": 4}
    part.errors = {"rpc error: code = Unavailable desc = busy": 4}
    part.timeline = {0: [50, 2], 1: [54, 2]}
    part.cpu_s = 0.5
    report = build_report(options(duration_s=2.0), [part], 0, 2 * S)
    assert report["count"] == 104
    assert report["total"] == 2 * S
    assert report["rps"] == pytest.approx(52.0)
    assert report["goodput"] == pytest.approx(50.0)
    assert report["fastest"] == 1_000_000 and report["slowest"] == 100_000_000
    assert [d["percentage"] for d in report["latencyDistribution"]] == list(PERCENTAGES)
    p50 = next(d["latency"] for d in report["latencyDistribution"] if d["percentage"] == 50)
    assert p50 == pytest.approx(50_000_000, rel=0.02)
    assert len(report["histogram"]) == 11
    assert sum(b["count"] for b in report["histogram"]) == 100
    assert report["histogram"][-1]["mark"] == pytest.approx(0.1)
    assert report["statusCodeDistribution"] == {"OK": 100, "Unavailable": 4}
    assert report["client"]["cpu_cores"] == pytest.approx(0.25)
    assert report["client"]["saturated"] is False
    assert [row["rps"] for row in report["timeline"]] == [50.0, 54.0]
    text = summary_text(report)
    assert "Requests/sec:\t52.00" in text and "[Unavailable]\t4 responses" in text


def test_ghz_histogram_of_an_empty_histogram() -> None:
    assert ghz_histogram(Histogram()) == []
