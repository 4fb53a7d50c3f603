"""Tracing is configured by the standard OTEL_* variables only, and off unless an exporter is
named; bad values fail the start with the variable's name."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.trace import SpanKind

from gateway.config.model_config import ConfigError
from gateway.observability.span_export import RecordExporter, RecordSpanProcessor
from gateway.observability.tracing import Tracing

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
UNSAMPLED_PARENT = TRACEPARENT[:-2] + "00"


def _from(env: dict[str, str], made: list[Tracing]) -> Tracing | None:
    tracing = Tracing.from_environment(env)
    if tracing is not None:
        made.append(tracing)
    return tracing


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_TRACES_EXPORTER": "none"},
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "always_off"},
        {
            "OTEL_TRACES_EXPORTER": "console",
            "OTEL_TRACES_SAMPLER": "traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0",
        },
    ],
)
def test_tracing_is_off_unless_an_exporter_is_named_and_something_can_be_sampled(
    env: dict[str, str], made: list[Tracing]
) -> None:
    assert _from(env, made) is None


@pytest.mark.parametrize(
    ("protocol", "exporter"),
    [(None, GrpcExporter), ("grpc", GrpcExporter), ("http/protobuf", HttpExporter)],
)
def test_otlp_exporter_follows_the_protocol_variable(
    protocol: str | None, exporter: type, made: list[Tracing]
) -> None:
    env = {"OTEL_TRACES_EXPORTER": "otlp"}
    if protocol is not None:
        env["OTEL_EXPORTER_OTLP_PROTOCOL"] = protocol
    tracing = _from(env, made)
    assert tracing is not None and isinstance(tracing.processor, RecordSpanProcessor)
    assert isinstance(tracing.processor.span_exporter, RecordExporter)
    assert isinstance(tracing.processor.span_exporter.exporter, exporter)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
            "OTEL_EXPORTER_OTLP_PROTOCOL='http/json'",
        ),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER='zipkin'"),
        (
            {"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "sometimes"},
            "OTEL_TRACES_SAMPLER='sometimes'",
        ),
        (
            {
                "OTEL_TRACES_EXPORTER": "console",
                "OTEL_TRACES_SAMPLER": "traceidratio",
                "OTEL_TRACES_SAMPLER_ARG": "1.5",
            },
            "OTEL_TRACES_SAMPLER_ARG",
        ),
    ],
)
def test_values_that_cannot_be_honoured_are_refused(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace("(", r"\(")):
        Tracing.from_environment(env)


def test_service_name_defaults_to_tensorgate_and_follows_otel_service_name(
    monkeypatch: pytest.MonkeyPatch, made: list[Tracing]
) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    tracing = _from({"OTEL_TRACES_EXPORTER": "console"}, made)
    assert tracing is not None
    assert tracing.resource.attributes["service.name"] == "tensorgate"
    assert isinstance(tracing.processor, BatchSpanProcessor)
    assert isinstance(tracing.processor.span_exporter, RecordExporter)
    assert isinstance(tracing.processor.span_exporter.exporter, ConsoleSpanExporter)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "edge-gateway")
    tracing = _from({"OTEL_TRACES_EXPORTER": "console"}, made)
    assert tracing is not None and tracing.resource.attributes["service.name"] == "edge-gateway"


def test_ratio_zero_samples_only_requests_whose_parent_was_sampled(made: list[Tracing]) -> None:
    env = {
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0",
    }
    tracing = _from(env, made)
    assert tracing is not None and not tracing.roots
    start = tracing.start
    assert start("rpc", SpanKind.SERVER, 1, None, None, {}) is None
    assert start("rpc", SpanKind.SERVER, 1, UNSAMPLED_PARENT, None, {}) is None
    span = start("rpc", SpanKind.SERVER, 1, TRACEPARENT, "vendor=x", {})
    assert span is not None and span.parent_id == int(TRACEPARENT[36:52], 16)
    assert span.ids[0] == TRACEPARENT[3:35]
    assert span.trace_state == "vendor=x"
