"""The worker's telemetry: spans of traced runs (in a real worker), its figures in ping replies,
and the W3C traceparent parser."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest

from channel.logs import TRACE_IDS
from channel.span_wire import SpanForm
from channel.telemetry import Telemetry, parse_w3c
from tests.support import onnx_models
from tests.support.waits import until
from tests.support.worker_harness import Harness

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
BATCH_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{BATCH_SPAN}-01"
TRACE = (int(TRACE_ID, 16), int(BATCH_SPAN, 16))


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Harness, str]]:
    path = onnx_models.mlp(tmp_path_factory.mktemp("telemetry") / "mlp.onnx")
    harness = Harness()
    try:
        assert harness.load("mlp:1", str(path))["ok"]
        yield harness, str(path)
    finally:
        harness.close()


def test_traced_run_returns_its_compute_span_under_the_batch_span(
    worker: tuple[Harness, str],
) -> None:
    harness, _ = worker
    before = time.time_ns()
    reply, _ = harness.run("mlp:1", {"x": np.ones((2, 64), np.float32)}, trace=TRACE)
    after = time.time_ns()
    assert reply["ok"]
    (span,) = reply["spans"].records()
    assert span["name"] == "compute"
    assert span["parent_id"] == int(BATCH_SPAN, 16)
    assert span["pid"] == harness.proc.pid
    assert 0 < span["span_id"] < 2**64
    assert before <= span["start_ns"] <= span["end_ns"] <= after
    assert span["attributes"] == {"tensorgate.model": "mlp:1"}


def test_untraced_or_badly_traced_runs_carry_no_spans(worker: tuple[Harness, str]) -> None:
    harness, _ = worker
    x = {"x": np.ones((1, 64), np.float32)}
    for fields in ({}, {"trace": (0, TRACE[1])}, {"trace": (TRACE[0], 0)}):
        reply, _ = harness.run("mlp:1", x, **fields)
        assert reply["ok"] and reply["spans"] is None


def test_ping_reports_the_workers_own_figures(worker: tuple[Harness, str]) -> None:
    harness, path = worker
    runs_before = harness.ping()["stats"]["runs"]
    harness.run("mlp:1", {"x": np.ones((1, 64), np.float32)})
    harness.run("no-such-model", {"x": np.ones((1, 64), np.float32)})
    stats = harness.ping()["stats"]
    assert stats["pid"] == harness.proc.pid
    assert stats["runs"] == runs_before + 2
    assert stats["run_errors"] >= 1
    assert stats["rss_bytes"] > 10_000_000 and stats["cpu_seconds"] > 0
    assert stats["start_time"] <= time.time()
    assert set(stats["load_seconds"]) == {"mlp:1"} and stats["load_seconds"]["mlp:1"] > 0
    assert harness.load("mlp:2", path)["ok"]
    assert set(harness.ping()["stats"]["load_seconds"]) == {"mlp:1", "mlp:2"}
    assert harness.unload("mlp:2")["ok"]
    assert set(harness.ping()["stats"]["load_seconds"]) == {"mlp:1"}


def _asleep(end: Harness) -> None:
    """Wait (bounded) until the worker has announced that it sleeps on its channel."""
    until(lambda: end.channel.worker_sleeps, "the worker going to sleep")


@pytest.mark.parametrize("handover", [False, True], ids=["one channel", "channel set"])
def test_ping_counts_a_wakeup_for_each_request_that_woke_a_sleeping_worker(
    handover: bool,
) -> None:
    harness = Harness(handover=handover)
    try:
        before = harness.ping()["stats"]["wakeups"]
        for n in range(1, 4):
            _asleep(harness)
            assert harness.ping()["stats"]["wakeups"] == before + n  # counted before it answers
    finally:
        harness.close()


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        (TRACEPARENT, (TRACE_ID, BATCH_SPAN, 1)),
        (f"01-{TRACE_ID}-{BATCH_SPAN}-00-future", (TRACE_ID, BATCH_SPAN, 0)),
        (f"00-{TRACE_ID}-{BATCH_SPAN}-01-extra", None),
        (f"ff-{TRACE_ID}-{BATCH_SPAN}-01", None),
        (f"00-{'0' * 32}-{BATCH_SPAN}-01", None),
        (f"00-{TRACE_ID}-{'0' * 16}-01", None),
        (f"00-{TRACE_ID.upper()}-{BATCH_SPAN}-01", None),
        ("", None),
        (None, None),
        (42, None),
    ],
)
def test_traceparent_parsing_follows_w3c(
    value: object, parsed: tuple[str, str, int] | None
) -> None:
    assert parse_w3c(value) == parsed


def test_log_records_carry_the_run_trace_ids_while_it_is_open() -> None:
    trace = Telemetry().trace(TRACE)
    assert trace is not None
    assert TRACE_IDS.get() is trace and trace.ids == (TRACE_ID, f"{trace.span_id:016x}")
    (span,) = trace.finish(SpanForm.of("compute", {})).records()
    assert TRACE_IDS.get() is None
    assert span["span_id"] == trace.span_id and span["parent_id"] == int(BATCH_SPAN, 16)
    assert Telemetry().trace(None) is None
