"""The exporters records go through: the record span processor (the SDK's batch span processor,
queueing records without its per-record checks until a batch's worth is queued, and the SDK's own
path otherwise), the record exporter's batches, and the HTTP exporter's transport."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.exporter.http.transport._requests import RequestsHTTPTransport
from opentelemetry.exporter.http.transport._urllib3 import Urllib3HTTPTransport
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.observability import span_export
from gateway.observability.span_export import HttpSpanExporter, RecordExporter, RecordSpanProcessor
from gateway.observability.span_records import BatchSpan, Record, span_count
from tests.observability.spans import GATEWAY, T0, TRACE, server_span


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


def _batch(span_id: int) -> BatchSpan:
    return BatchSpan(TRACE, span_id, 0x51, (), T0 + 200, T0 + 800, {"tensorgate.batch.rows": 2})


class _Recording(InMemorySpanExporter):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls.append(len(spans))
        return super().export(spans)


@given(st.lists(st.integers(0, 3), max_size=40), st.integers(1, 12))
def test_the_record_exporter_sends_at_most_the_batch_size_in_spans_per_call(
    phases: list[int], limit: int
) -> None:
    batch = _batch(0xB1)
    records: list[Record] = [
        server_span(0x100 + i, phases=[(T0, batch)] * n, done_ns=batch.end_ns, child_ids=i + 1)
        for i, n in enumerate(phases)
    ]
    inner = _Recording()
    exporter = RecordExporter(inner, GATEWAY, {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": str(limit)})
    assert exporter.export(records) is SpanExportResult.SUCCESS  # type: ignore[arg-type]
    counts = iter([span_count(r) for r in records])
    for call in inner.calls:  # each call: a run of whole records, one alone if over the limit
        run = [next(counts)]
        while sum(run) < call:
            run.append(next(counts))
        assert sum(run) == call and (call <= limit or len(run) == 1)
    assert next(counts, None) is None
    names = [s.name for s in inner.get_finished_spans()]
    assert names == [s.name for r in records for s in exporter.forms.spans(r)]


def test_the_http_exporter_posts_through_urllib3_unless_given_a_session() -> None:
    import requests

    plain = HttpSpanExporter(endpoint="http://127.0.0.1:9/v1/traces")
    given_session = HttpSpanExporter(
        endpoint="http://127.0.0.1:9/v1/traces", session=requests.Session()
    )
    try:
        assert isinstance(plain._client._transport, Urllib3HTTPTransport)
        assert isinstance(given_session._client._transport, RequestsHTTPTransport)
    finally:
        plain.shutdown()
        given_session.shutdown()
