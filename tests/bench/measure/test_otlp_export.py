"""bench.measure.otlp_export: the traced Predicts' records, both encoders and both exports."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import SpanKind

from bench.measure.otlp_export import (
    ENCODERS,
    EXPORTS,
    PREDICT,
    RESOURCE,
    SPANS_PER_PREDICT,
    WORKER_PID,
    cpu_us_per_span,
    export_work,
    exporter,
    predict_records,
    readable_spans,
    same_request,
)
from bench.systems.tracing import sink_spans, start_sink
from gateway.observability.span_records import ServerSpan, SpanForms, span_count


def test_a_traced_predict_leaves_one_record_of_its_six_spans() -> None:
    records = predict_records(3)
    assert len(records) == 3
    assert [span_count(r) for r in records] == [SPANS_PER_PREDICT] * 3
    record = records[0]
    assert isinstance(record, ServerSpan) and record.name == PREDICT
    assert record.kind is SpanKind.SERVER and len(record.carried) == 1
    assert record.attributes == {
        "rpc.system": "grpc",
        "rpc.service": "tensorflow.serving.PredictionService",
        "rpc.method": "Predict",
        "tensorgate.model": "mlp",
        "rpc.grpc.status_code": 0,
    }
    spans = readable_spans(records[:1], SpanForms(RESOURCE))
    assert [s.name for s in spans] == [
        PREDICT,
        "decode",
        "queue wait",
        "encode",
        "batch",
        "compute",
    ]
    compute = spans[-1]
    assert compute.parent is not None and compute.parent.span_id == spans[-2].context.span_id
    assert compute.resource.attributes["process.pid"] == WORKER_PID
    assert len({s.context.trace_id for s in spans}) == 1


def test_both_encoders_write_the_same_request() -> None:
    records = predict_records(2)
    forms = SpanForms(RESOURCE)
    assert same_request(records, forms) == {"bytes": True, "message": True, "spans": 12}
    bodies = {way: encode(records, forms) for way, encode in ENCODERS.items()}
    assert bodies["library"] == bodies["tensorgate"]
    message = ExportTraceServiceRequest.FromString(bodies["tensorgate gRPC"])  # type: ignore[arg-type]
    assert message == ExportTraceServiceRequest.FromString(bodies["library"])  # type: ignore[arg-type]
    assert len(bodies["spans only"]) == 12  # type: ignore[arg-type]


def test_the_cpu_per_span_covers_at_least_the_time_asked() -> None:
    calls = []
    per_span = cpu_us_per_span(lambda: calls.append(sum(range(1000))), 4, 0.01)
    assert per_span > 0 and calls
    assert per_span * 4 * len(calls) >= 0.01e6


def test_both_exports_reach_the_sink(tmp_path: Path) -> None:
    records = predict_records(2)
    forms = SpanForms(RESOURCE)
    sink, endpoint = start_sink(tmp_path)
    sender = exporter(endpoint)
    try:
        for way in EXPORTS:
            export_work(way, sender, records, forms)()
        assert sink_spans(endpoint) == 2 * 12
    finally:
        sender.shutdown()
        sink.stop()
