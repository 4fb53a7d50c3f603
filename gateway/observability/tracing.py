"""OpenTelemetry traces, configured only by the standard ``OTEL_*`` environment variables.

On when ``OTEL_TRACES_EXPORTER`` names an exporter and ``OTEL_SDK_DISABLED`` is not ``true``:
``otlp`` (``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``grpc``, the
Python SDK's default, or ``http/protobuf``), ``console``, or any exporter registered under the
``opentelemetry_traces_exporter`` entry points; the exporters read their own variables
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ...). Unlike the spec's default (``otlp``), an unset
``OTEL_TRACES_EXPORTER`` means no tracing: a server should not send spans to localhost:4317
unasked. ``OTEL_TRACES_SAMPLER`` / ``_ARG`` choose the sampler (default
``parentbased_always_on``); ``always_off``, or a ``traceidratio`` of 0, turns tracing off
altogether. ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` make the resource (service name
``tensorgate`` unless set, and the process attributes of OTel's process detector); spans leave
through a ``BatchSpanProcessor`` (``OTEL_BSP_*``).

Spans are built here from timestamps taken on the request path and handed, finished, to the span
processor as ``ReadableSpan`` values, rather than through the SDK's ``Tracer`` (whose span objects
cost several times more per span): a sampled request costs a few dictionaries and clock reads, an
unsampled one a header lookup (and, with a parent or a root ratio above 0, one sampler call), and
with tracing off nothing at all. The worker's spans arrive as plain records in the run reply and
are exported with the worker's ``process.pid``.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.resources import ProcessResourceDetector, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    Link,
    SpanContext,
    SpanKind,
    TraceFlags,
    TraceState,
    get_current_span,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.trace.status import Status, StatusCode

from gateway.config.model_config import ConfigError
from gateway.observability.otlp_wire import WIRE_ENCODED
from workers.telemetry import SpanRecord

SAMPLED = TraceFlags(TraceFlags.SAMPLED)
SCOPE = InstrumentationScope("tensorgate")
UNSET = Status(StatusCode.UNSET)
NO_STATE = TraceState()
Attributes = dict[str, Any]


@dataclass(slots=True, eq=False)
class ServerSpan:
    """A sampled request's server span, open while the request is served; ``phases`` holds one
    ``[enqueued, dispatched, done]`` (Unix ns) per batch the request joined."""

    name: str
    kind: SpanKind
    context: SpanContext
    parent: SpanContext | None
    start_ns: int
    attributes: Attributes
    phases: list[list[int]] = field(default_factory=list)

    @property
    def ids(self) -> tuple[str, str]:
        """(trace id, span id) in hex, as the log format writes them."""
        return f"{self.context.trace_id:032x}", f"{self.context.span_id:016x}"


@dataclass(slots=True, eq=False)
class BatchSpan:
    """A batch's span: child of its first sampled member, linked to the others."""

    context: SpanContext
    parent: SpanContext
    links: tuple[Link, ...]
    start_ns: int

    @property
    def traceparent(self) -> str:
        return f"00-{self.context.trace_id:032x}-{self.context.span_id:016x}-01"


class Tracing:
    """Makes and exports spans (see the module doc). ``roots``: False when the sampler can never
    sample a request without a parent (then such a request costs one header lookup)."""

    def __init__(
        self, processor: SpanProcessor, sampler: Sampler, resource: Resource, *, roots: bool = True
    ) -> None:
        self.processor = processor
        self.sampler = sampler
        self.resource = resource
        self.roots = roots
        self._ids = RandomIdGenerator()
        self._span_id = self._ids.generate_span_id
        self._on_end = processor.on_end
        self._propagator = TraceContextTextMapPropagator()
        self._worker_resources: dict[int, Resource] = {}

    @classmethod
    def from_environment(cls, env: Mapping[str, str] = os.environ) -> Tracing | None:
        """Tracing as the ``OTEL_*`` variables ask, or None when off; ConfigError for values
        that cannot be honoured."""
        if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return None
        names = [n.strip() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",")]
        exporters = [_exporter(n, env) for n in names if n and n != "none"]
        sampler, roots = _sampler(env)
        if not exporters or sampler is None:
            return None
        processor: SpanProcessor = BatchSpanProcessor(exporters[0])
        if len(exporters) > 1:
            from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor

            multi = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
            for exporter in exporters:
                multi.add_span_processor(BatchSpanProcessor(exporter))
            processor = multi
        return cls(processor, sampler, default_resource(), roots=roots)

    # -- requests -------------------------------------------------------------------------------
    def start(
        self,
        name: str,
        kind: SpanKind,
        start_ns: int,
        traceparent: str | None,
        tracestate: str | None,
        attributes: Attributes,
    ) -> ServerSpan | None:
        """The server span of a request, continuing ``traceparent``; None when not sampled."""
        parent_context = parent = None
        if traceparent:
            carrier = {"traceparent": traceparent, "tracestate": tracestate or ""}
            parent_context = self._propagator.extract(carrier)
            parent = get_current_span(parent_context).get_span_context()
            if not parent.is_valid:
                parent_context = parent = None
        if parent is None and not self.roots:
            return None
        trace_id = parent.trace_id if parent is not None else self._ids.generate_trace_id()
        decision = self.sampler.should_sample(parent_context, trace_id, name, kind, attributes)
        if decision.decision != Decision.RECORD_AND_SAMPLE:
            return None
        if decision.attributes:
            attributes.update(decision.attributes)
        context = SpanContext(
            trace_id, self._ids.generate_span_id(), False, SAMPLED, decision.trace_state
        )
        return ServerSpan(name, kind, context, parent, start_ns, attributes)

    def end(self, span: ServerSpan, end_ns: int, error: str | None = None) -> None:
        """Export the server span (status ERROR with ``error``, if given) and its children:
        ``decode`` (until the first queueing), ``queue wait`` per batch joined, ``encode``
        (from the last batch's end)."""
        status = Status(StatusCode.ERROR, error) if error else UNSET
        self._emit(
            span.name,
            span.context,
            span.parent,
            span.start_ns,
            end_ns,
            span.attributes,
            kind=span.kind,
            status=status,
        )
        if not span.phases:
            return
        self._child(span, "decode", span.start_ns, span.phases[0][0])
        for enqueued, dispatched, _ in span.phases:
            self._child(span, "queue wait", enqueued, dispatched)
        done = max(phase[2] for phase in span.phases)
        if done:
            self._child(span, "encode", done, end_ns)

    # -- batches --------------------------------------------------------------------------------
    def start_batch(self, members: Sequence[ServerSpan], start_ns: int) -> BatchSpan:
        """The span of a batch whose sampled members are ``members`` (at least one)."""
        first = members[0].context
        context = SpanContext(first.trace_id, self._ids.generate_span_id(), False, SAMPLED)
        links = tuple(Link(m.context) for m in members[1:])
        return BatchSpan(context, first, links, start_ns)

    def end_batch(
        self, batch: BatchSpan, end_ns: int, attributes: Attributes, worker: list[SpanRecord]
    ) -> None:
        """Export a batch's span and the worker's spans under it."""
        self._emit(
            "batch",
            batch.context,
            batch.parent,
            batch.start_ns,
            end_ns,
            attributes,
            links=batch.links,
        )
        for record in worker:
            context = SpanContext(
                batch.context.trace_id, int(record["span_id"], 16), False, SAMPLED
            )
            parent = SpanContext(
                batch.context.trace_id, int(record["parent_id"], 16), False, SAMPLED
            )
            self._emit(
                record["name"],
                context,
                parent,
                record["start_ns"],
                record["end_ns"],
                dict(record["attributes"]),
                resource=self.worker_resource(record["pid"]),
            )

    def worker_resource(self, pid: int) -> Resource:
        """The gateway's resource with the worker's process attributes."""
        resource = self._worker_resources.get(pid)
        if resource is None:
            kept = {
                k: v for k, v in self.resource.attributes.items() if not k.startswith("process.")
            }
            kept.update({"process.pid": pid, "process.parent_pid": os.getpid()})
            resource = self._worker_resources[pid] = Resource(kept, self.resource.schema_url)
        return resource

    def shutdown(self) -> None:
        """Export what is queued and stop (blocks up to the exporters' timeouts)."""
        self.processor.shutdown()

    # -- helpers --------------------------------------------------------------------------------
    def _child(self, span: ServerSpan, name: str, start_ns: int, end_ns: int) -> None:
        parent = span.context
        context = SpanContext(parent.trace_id, self._span_id(), False, SAMPLED, NO_STATE)
        self._emit(name, context, parent, start_ns, max(start_ns, end_ns), {})

    def _emit(
        self,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        start_ns: int,
        end_ns: int,
        attributes: Attributes,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        status: Status = UNSET,
        links: Sequence[Link] = (),
        resource: Resource | None = None,
    ) -> None:
        self._on_end(
            ReadableSpan(
                name=name,
                context=context,
                parent=parent,
                resource=resource or self.resource,
                attributes=attributes,
                links=links,
                kind=kind,
                status=status,
                start_time=start_ns,
                end_time=end_ns,
                instrumentation_scope=SCOPE,
            )
        )


def default_resource() -> Resource:
    """OTel's process attributes, then ``OTEL_RESOURCE_ATTRIBUTES`` / ``OTEL_SERVICE_NAME``
    (service name ``tensorgate`` when neither names one)."""
    resource = ProcessResourceDetector().detect().merge(Resource.create())
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "tensorgate"}))
    return resource


def _exporter(name: str, env: Mapping[str, str]) -> SpanExporter:
    """The exporter ``OTEL_TRACES_EXPORTER`` names (``otlp`` resolved by protocol; the SDK's OTLP
    exporters with :mod:`~gateway.observability.otlp_wire`'s encoding)."""
    entry = name
    if name == "otlp":
        protocol = (
            env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "grpc"
        ).strip()
        by_protocol = {"grpc": "otlp_proto_grpc", "http/protobuf": "otlp_proto_http"}
        if protocol not in by_protocol:
            raise ConfigError(
                f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported by tensorgate "
                "(grpc or http/protobuf)"
            )
        entry = by_protocol[protocol]
    points = importlib.metadata.entry_points(group="opentelemetry_traces_exporter", name=entry)
    if not points:
        raise ConfigError(f"OTEL_TRACES_EXPORTER={name!r}: no such span exporter is installed")
    factory = next(iter(points)).load()
    exporter: SpanExporter = WIRE_ENCODED.get(factory, factory)()
    return exporter


def _sampler(env: Mapping[str, str]) -> tuple[Sampler | None, bool]:
    """``(sampler, whether a request without a parent can be sampled)``; None: never samples."""
    name = env.get("OTEL_TRACES_SAMPLER", "parentbased_always_on").strip().lower()
    raw = env.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
    ratio = 1.0
    if name.endswith("traceidratio") and raw:
        try:
            ratio = float(raw)
        except ValueError:
            ratio = -1.0
        if not 0.0 <= ratio <= 1.0:
            raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG must be a ratio in 0..1, got {raw!r}")
    samplers: dict[str, tuple[Sampler | None, bool]] = {
        "always_on": (ALWAYS_ON, True),
        "always_off": (None, False),
        "traceidratio": (TraceIdRatioBased(ratio) if ratio > 0 else None, ratio > 0),
        "parentbased_always_on": (ParentBased(ALWAYS_ON), True),
        "parentbased_always_off": (ParentBased(ALWAYS_OFF), False),
        "parentbased_traceidratio": (ParentBased(TraceIdRatioBased(ratio)), ratio > 0),
    }
    if name not in samplers:
        raise ConfigError(f"OTEL_TRACES_SAMPLER={name!r} is not one of {', '.join(samplers)}")
    return samplers[name]
