"""The spans of traced Predicts encoded and exported two ways, in CPU µs per span.

The same records (:func:`predict_records`, made by the gateway's own recorder, batch observer and
tracing) go through OpenTelemetry's OTLP encoder (``encode_spans`` over the ``ReadableSpan``
values the SDK needs, which :class:`~gateway.observability.span_records.SpanForms` makes) and
through tensorgate's (:func:`~gateway.observability.otlp_wire.encode_records`). Exports go through
one :class:`~gateway.observability.span_export.HttpSpanExporter` to an OTLP sink: the library's
way is the SDK exporter's own ``export`` on that exporter (same client, transport and sink), so
only the encoding differs. CPU is this thread's (``time.thread_time``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as SdkHttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from channel.span_wire import SpanForm
from gateway.observability.batches import QueueLabels, QueueObserver
from gateway.observability.calls import Recorder
from gateway.observability.otlp_wire import encode_records
from gateway.observability.span_export import HttpSpanExporter
from gateway.observability.span_records import Record, SpanForms, span_count
from gateway.observability.tfs_metrics import TF_SERVING
from gateway.observability.tracing import Sampling, Tracing
from gateway.worker_channel.lease import RunResult

PREDICT = "tensorflow.serving.PredictionService/Predict"
SPANS_PER_PREDICT = 6
"""A traced Predict of one batch: its server span, ``decode``, ``queue wait``, ``encode``, the
batch's span and the worker's ``compute``."""
WORKER_PID = 4242
RESOURCE = Resource(
    {"service.name": "tensorgate-bench", "process.pid": 4241, "process.runtime.name": "cpython"}
)


class _Kept:
    """A span processor that keeps the records handed to it."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def on_end(self, record: Record) -> None:
        self.records.append(record)

    def shutdown(self) -> None:
        """Nothing to flush."""


def predict_records(requests: int) -> list[Record]:
    """The records ``requests`` traced gRPC Predicts of the bench's MLP leave, each in a batch of
    its own with the worker's ``compute`` span, as the gateway's hooks make them."""
    kept = _Kept()
    tracing = Tracing(kept, Sampling(True, 1.0), RESOURCE)  # type: ignore[arg-type]
    recorder = Recorder(None, None, tracing)
    queue = QueueObserver(QueueLabels("mlp", "1", "ONNX", 1, None), None, None, tracing)
    compute = SpanForm.of("compute", {"tensorgate.model": "mlp:1"})
    first = {
        "rpc.system": "grpc",
        "rpc.service": "tensorflow.serving.PredictionService",
        "rpc.method": "Predict",
    }
    for _ in range(requests):
        call, token = recorder.begin(TF_SERVING, "Predict", "GRPC", PREDICT, None, None, first)
        note = queue.on_batch([queue.on_enqueue()], [20e-6], [1], 1)
        assert note is not None and note.span is not None
        now = time.time_ns()
        spans = compute.spans(now, now + 40_000, _span_id(), note.span.span_id, WORKER_PID)
        note.done(RunResult({}, 40.0, spans))
        call.model = "mlp"
        recorder.end(call, token, attributes={"rpc.grpc.status_code": 0})
    return kept.records


def _span_id() -> int:
    return random.getrandbits(64) or 1


def readable_spans(records: Sequence[Record], forms: SpanForms) -> list[ReadableSpan]:
    """The ``ReadableSpan`` values of ``records``: what the SDK's encoder and exporters take."""
    return [span for record in records for span in forms.spans(record)]


def library_body(records: Sequence[Record], forms: SpanForms) -> bytes:
    """The request body as the SDK's OTLP/HTTP exporter encodes it (its gRPC exporter hands the
    same message to its stub)."""
    return encode_spans(readable_spans(records, forms)).SerializePartialToString()


def tensorgate_body(records: Sequence[Record], forms: SpanForms) -> bytes:
    return encode_records(records, forms)


def tensorgate_grpc(records: Sequence[Record], forms: SpanForms) -> bytes:
    """What tensorgate's OTLP/gRPC exporter sends: its bytes parsed into the request message,
    which the stub serializes."""
    return ExportTraceServiceRequest.FromString(encode_records(records, forms)).SerializeToString()


ENCODERS: dict[str, Callable[[Sequence[Record], SpanForms], object]] = {
    "spans only": readable_spans,
    "library": library_body,
    "tensorgate": tensorgate_body,
    "tensorgate gRPC": tensorgate_grpc,
}
"""The encodings measured: the ``ReadableSpan`` values alone (part of the library's cost), the
library's encoder, tensorgate's for OTLP/HTTP and for OTLP/gRPC."""
EXPORTS = ("library export", "tensorgate export")
"""Encoding and posting to the sink, the SDK exporter's way and tensorgate's."""


def exporter(endpoint: str) -> HttpSpanExporter:
    """tensorgate's OTLP/HTTP exporter to the sink at ``endpoint`` (``http://host:port``)."""
    return HttpSpanExporter(endpoint=f"{endpoint}/v1/traces", timeout=10)


def export_work(
    way: str, sender: HttpSpanExporter, records: Sequence[Record], forms: SpanForms
) -> Callable[[], object]:
    """One export of ``records`` the ``way`` named in :data:`EXPORTS`; raises when the sink does
    not take it."""
    count = sum(map(span_count, records))

    def library() -> object:
        return _checked(SdkHttpExporter.export(sender, readable_spans(records, forms)))

    def tensorgate() -> object:
        return _checked(sender.export_records(records, forms, count))

    return library if way == "library export" else tensorgate


def _checked(result: SpanExportResult) -> SpanExportResult:
    if result is not SpanExportResult.SUCCESS:
        raise RuntimeError(f"the sink did not take the spans: {result}")
    return result


def cpu_us_per_span(work: Callable[[], object], spans: int, min_cpu_s: float) -> float:
    """CPU µs of this thread per span of one ``work()`` (``spans`` spans), over as many calls as
    take at least ``min_cpu_s`` seconds of it."""
    calls = 0
    began = time.thread_time_ns()
    while True:
        work()
        calls += 1
        used = time.thread_time_ns() - began
        if used >= min_cpu_s * 1e9:
            return used / calls / spans / 1e3


def same_request(records: Sequence[Record], forms: SpanForms) -> dict[str, Any]:
    """Whether both encoders write the same request of ``records``: ``{"bytes", "message",
    "spans"}`` (equal bytes, equal parsed messages, the spans in it)."""
    ours, theirs = tensorgate_body(records, forms), library_body(records, forms)
    message = ExportTraceServiceRequest.FromString(ours)
    spans = sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)
    return {
        "bytes": ours == theirs,
        "message": message == ExportTraceServiceRequest.FromString(theirs),
        "spans": spans,
    }
