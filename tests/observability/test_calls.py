"""The recorder: opening a call makes its record current (and its trace ids the logs'); closing
it hands the filled-in record to each output that is on."""

from __future__ import annotations

from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from channel.logs import TRACE_IDS
from gateway.observability.call_record import CURRENT
from gateway.observability.calls import Recorder
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.span_export import RecordExporter
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.tracing import Sampling, Tracing, default_resource

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _tracing(ratio: float) -> tuple[Tracing, InMemorySpanExporter]:
    exporter, resource = InMemorySpanExporter(), default_resource()
    processor = SimpleSpanProcessor(RecordExporter(exporter, resource))
    return Tracing(processor, Sampling(True, ratio), resource), exporter


def test_a_call_is_current_while_open_and_its_record_feeds_every_output() -> None:
    tracing, exporter = _tracing(1.0)
    tfs, metrics = TfServingMetrics(), GatewayMetrics()
    recorder = Recorder(tfs, metrics, tracing)
    recorder.models_changed(["m"])
    assert not recorder.needs_parent
    call, token = recorder.begin(
        "tfserving", "Predict", "GRPC", "svc/Predict", None, None, {"rpc.method": "Predict"}
    )
    assert CURRENT.get() is call and TRACE_IDS.get() is call.span
    assert metrics.in_flight[("GRPC", "tfserving")] == 1
    call.model, call.status = "m", "NOT_FOUND"
    recorder.end(call, token, error=None, attributes={"rpc.grpc.status_code": 5})
    assert CURRENT.get() is None and TRACE_IDS.get() is None
    assert call.elapsed_s > 0 and metrics.in_flight[("GRPC", "tfserving")] == 0
    assert dict(tfs.request_count.items()) == {("m", "NOT_FOUND"): 1}
    assert [labels for labels, _ in metrics.request_duration.items()] == [
        ("m", "Predict", "GRPC", "tfserving")
    ]
    assert dict(metrics.requests.items()) == {
        ("m", "", "Predict", "GRPC", "tfserving", "NOT_FOUND"): 1
    }
    (span,) = exporter.get_finished_spans()
    assert span.name == "svc/Predict"
    assert dict(span.attributes or {}) == {
        "rpc.method": "Predict",
        "tensorgate.model": "m",
        "rpc.grpc.status_code": 5,
    }


def test_at_ratio_0_without_metrics_only_a_sampled_parent_makes_a_span() -> None:
    tracing, exporter = _tracing(0.0)
    recorder = Recorder(None, None, tracing)
    assert recorder.needs_parent
    for traceparent in (None, TRACEPARENT):
        call, token = recorder.begin(
            "tfserving", "Predict", "REST", "POST /x", traceparent, None, {}
        )
        assert (call.span is None) == (traceparent is None)
        recorder.end(call, token)
    (span,) = exporter.get_finished_spans()
    assert span.parent is not None and span.parent.span_id == 0x00F067AA0BA902B7


def test_metrics_alone_record_without_spans() -> None:
    recorder = Recorder(TfServingMetrics(), GatewayMetrics(), None)
    recorder.models_changed(["m"])
    assert not recorder.needs_parent
    call, token = recorder.begin("tfserving", "GetModelStatus", "REST", "GET", None, None, {})
    assert call.span is None and TRACE_IDS.get() is None
    recorder.end(call, token)
    assert recorder.tfs is not None and dict(recorder.tfs.request_count.items()) == {("", "OK"): 1}
