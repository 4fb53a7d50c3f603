"""The direct OTLP encoder writes exactly what the SDK's ``encode_spans`` writes, for every kind
of span, attribute, link, event, status, resource and scope; the OTLP exporters tracing builds
use it."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags, TraceState
from opentelemetry.trace.status import Status, StatusCode
from opentelemetry.util.types import Attributes

from gateway.observability import otlp_fields
from gateway.observability.otlp_wire import encode_request
from gateway.observability.span_export import GrpcSpanExporter, HttpSpanExporter, RecordExporter
from gateway.observability.tracing import Tracing

SAMPLED = TraceFlags(TraceFlags.SAMPLED)
GATEWAY = Resource({"service.name": "tensorgate", "process.pid": 10}, "https://schema/1")
WORKER = Resource({"service.name": "tensorgate", "process.pid": 11})
SCOPE = InstrumentationScope("tensorgate", "1.2", "https://scope", {"scope.attr": "x"})


def _context(span_id: int, remote: bool = False, state: TraceState | None = None) -> SpanContext:
    return SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, span_id, remote, SAMPLED, state)


def _span(span_id: int, **overrides: object) -> ReadableSpan:
    fields: dict[str, object] = {
        "name": "batch",
        "context": _context(span_id),
        "parent": _context(1),
        "resource": GATEWAY,
        "start_time": 1_700_000_000_000_000_001,
        "end_time": 1_700_000_000_000_900_000,
        "instrumentation_scope": SCOPE,
    }
    fields.update(overrides)
    return ReadableSpan(**fields)  # type: ignore[arg-type]


ATTRIBUTES: list[Attributes] = [
    {"rpc.system": "grpc", "rpc.grpc.status_code": 0, "big": 2**62, "neg": -5},
    {"same": 1},
    {"same": True},
    {"same": 1.0},
    {"f": -0.25, "b": False, "raw": b"\x00\xff", "empty": ""},
    {"list": ("a", "b"), "ints": [1, 2, 3], "mixed": [True, 2.5], "none": []},
    {"map": {"k": "v", "n": 7}, "long": "x" * 300},
]


def _spans() -> list[ReadableSpan]:
    spans = [_span(100 + i, attributes=attrs) for i, attrs in enumerate(ATTRIBUTES)]
    spans += [
        _span(
            200,
            name="tensorflow.serving.PredictionService/Predict",
            kind=SpanKind.SERVER,
            parent=_context(2, remote=True),
            context=_context(201, state=TraceState([("vendor", "v1"), ("other", "o")])),
            status=Status(StatusCode.ERROR, "UNAVAILABLE"),
        ),
        _span(202, parent=None, kind=SpanKind.CLIENT, status=Status(StatusCode.OK)),
        _span(
            203,
            links=(
                Link(_context(3)),
                Link(_context(4, remote=True), {"member": 2}),
            ),
            events=(Event("retry", {"attempt": 2}, timestamp=1_700_000_000_000_000_500),),
        ),
        _span(204, name="compute", resource=WORKER, kind=SpanKind.PRODUCER),
        _span(205, instrumentation_scope=None, kind=SpanKind.CONSUMER),
        _span(206, name="decode", start_time=None, end_time=None),
    ]
    return spans


def test_encoding_matches_the_sdk_byte_for_byte() -> None:
    spans = _spans()
    expected = encode_spans(spans)
    encoded = encode_request(spans)
    assert ExportTraceServiceRequest.FromString(encoded) == expected
    assert encoded == expected.SerializeToString()
    # Encoded again from the caches (pairs, names, resources, scopes): the same bytes.
    assert encode_request(spans) == encoded


def test_the_attribute_cache_keeps_equal_values_of_different_types_apart() -> None:
    otlp_fields.PAIRS.clear()
    spans = [_span(i, attributes=a) for i, a in enumerate([{"v": 1}, {"v": True}, {"v": 1.0}])]
    request = ExportTraceServiceRequest.FromString(encode_request(spans))
    values = [s.attributes[0].value for s in request.resource_spans[0].scope_spans[0].spans]
    assert [v.WhichOneof("value") for v in values] == ["int_value", "bool_value", "double_value"]


def test_equal_floats_of_opposite_sign_keep_their_sign() -> None:
    otlp_fields.PAIRS.clear()
    spans = [_span(i, attributes={"v": v}) for i, v in enumerate([0.0, -0.0])]
    assert encode_request(spans) == encode_spans(spans).SerializeToString()


def test_values_the_sdk_cannot_encode_are_refused() -> None:
    with pytest.raises(TypeError):
        encode_request([_span(1, attributes={"bad": object()})])


@pytest.mark.parametrize(
    ("protocol", "exporter"), [("grpc", GrpcSpanExporter), ("http/protobuf", HttpSpanExporter)]
)
def test_otlp_exporters_encode_with_the_wire_encoder(
    protocol: str, exporter: type, made: list[Tracing]
) -> None:
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
    tracing = Tracing.from_environment(env)
    assert tracing is not None
    made.append(tracing)
    assert isinstance(tracing.processor, BatchSpanProcessor)
    assert isinstance(tracing.processor.span_exporter, RecordExporter)
    assert type(tracing.processor.span_exporter.exporter) is exporter


def test_the_grpc_exporter_hands_the_stub_the_sdk_s_request(made: list[Tracing]) -> None:
    exporter = GrpcSpanExporter(endpoint="127.0.0.1:9", insecure=True)
    try:
        spans = _spans()
        assert exporter._translate_data(spans) == encode_spans(spans)
    finally:
        exporter.shutdown()
