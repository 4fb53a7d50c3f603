"""What the span tests share: one trace, the gateway's resource, a start time and a server span."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import SpanKind

from gateway.observability.span_records import ServerSpan

TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736
GATEWAY = Resource({"service.name": "tensorgate", "process.pid": 10, "process.parent_pid": 1})
T0 = 1_700_000_000_000_000_000
"""Nanoseconds since the epoch."""


def server_span(span_id: int, **fields: object) -> ServerSpan:
    """A 1 µs gRPC Predict server span of :data:`TRACE` at :data:`T0`, root of its trace;
    ``fields`` replace the defaults."""
    values: dict[str, object] = {
        "name": "tensorflow.serving.PredictionService/Predict",
        "kind": SpanKind.SERVER,
        "trace_id": TRACE,
        "span_id": span_id,
        "parent_id": 0,
        "trace_state": None,
        "start_ns": T0,
        "attributes": {"rpc.system": "grpc"},
        "end_ns": T0 + 1000,
    }
    values.update(fields)
    return ServerSpan(**values)  # type: ignore[arg-type]
