"""bench.systems.tracing: the OTEL_* variables of a traced gateway, and the real OTLP sink."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from bench.systems.tracing import TRACING_SAMPLERS, sink_spans, start_sink, tracing_env


def test_tracing_env_samples_at_the_ratio_and_exports_over_otlp_http() -> None:
    env = tracing_env("http://127.0.0.1:4318", TRACING_SAMPLERS["ratio 1.0"])
    assert env["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio"
    assert env["OTEL_TRACES_SAMPLER_ARG"] == "1.0"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4318"
    assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"
    assert env["OTEL_TRACES_EXPORTER"] == "otlp"


def test_the_sink_counts_the_spans_it_is_sent(tmp_path: Path) -> None:
    sink, endpoint = start_sink(tmp_path)
    try:
        assert sink_spans(endpoint) == 0
        export = trace_service_pb2.ExportTraceServiceRequest()
        spans = export.resource_spans.add().scope_spans.add().spans
        for name in ("a", "b", "c"):
            spans.add(name=name)
        request = urllib.request.Request(
            f"{endpoint}/v1/traces",
            export.SerializeToString(),
            {"Content-Type": "application/x-protobuf"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        assert sink_spans(endpoint) == 3
    finally:
        sink.stop()
    assert sink.process.poll() is not None
