"""bench.load.ghz_report: ghz's JSON fields (nanoseconds), the client section, the summary text."""

from __future__ import annotations

import pytest

from bench.load.ghz_report import PERCENTAGES, build_report, ghz_histogram, summary_text
from bench.load.histogram import Histogram
from bench.load.loadgen import LoadOptions
from bench.load.loadgen_worker import Part

S = 1_000_000_000


def options(**kw: object) -> LoadOptions:
    base: dict[str, object] = {"target": "127.0.0.1:1", "method": "/a.B/C", "payload": b"x"}
    base.update(kw)
    return LoadOptions(**base)  # type: ignore[arg-type]


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
