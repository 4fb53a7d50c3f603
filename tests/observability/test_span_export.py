"""The record span processor: the SDK's batch span processor, queueing records without its
per-record checks until a batch's worth is queued, and the SDK's own path otherwise."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from gateway.observability import span_export
from gateway.observability.span_export import RecordSpanProcessor


class _Exporter(SpanExporter):
    def __init__(self) -> None:
        self.batches: list[list[object]] = []
        self.called = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.batches.append(list(spans))
        self.called.set()
        return SpanExportResult.SUCCESS


def _processor(exporter: _Exporter) -> RecordSpanProcessor:
    # A schedule delay of an hour: only a full batch (or a flush) exports.
    return RecordSpanProcessor(exporter, max_export_batch_size=4, schedule_delay_millis=3.6e6)


def test_records_queue_until_a_batch_is_full_then_the_export_thread_sends_them() -> None:
    exporter = _Exporter()
    processor = _processor(exporter)
    try:
        for record in "abc":
            processor.on_end(record)  # type: ignore[arg-type]
        assert list(processor._batch_processor._queue) == ["c", "b", "a"]
        assert not exporter.called.is_set()
        processor.on_end("d")  # type: ignore[arg-type]  # the fourth: the SDK wakes its thread
        assert exporter.called.wait(30)
        assert exporter.batches == [["a", "b", "c", "d"]]
    finally:
        processor.shutdown()


def test_after_shutdown_records_are_dropped_as_the_sdk_drops_them() -> None:
    exporter = _Exporter()
    processor = _processor(exporter)
    processor.shutdown()
    processor.on_end("late")  # type: ignore[arg-type]
    assert not processor._batch_processor._queue and exporter.batches == []


def test_in_a_forked_child_records_go_through_the_sdk_s_fork_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exporter = _Exporter()
    processor = _processor(exporter)
    seen: list[object] = []
    monkeypatch.setattr(processor._batch_processor, "emit", seen.append)
    pid = span_export._PID[0]
    try:
        processor.on_end("here")  # type: ignore[arg-type]
        span_export._PID[0] = -1  # as if this process were a fork
        processor.on_end("child")  # type: ignore[arg-type]
        assert seen == ["child"] and list(processor._batch_processor._queue) == ["here"]
    finally:
        span_export._PID[0] = pid
        monkeypatch.undo()
        processor.shutdown()
