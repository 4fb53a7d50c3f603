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
through the SDK's ``BatchSpanProcessor`` (``OTEL_BSP_*``; see
:class:`~gateway.observability.span_export.RecordSpanProcessor`).

The request path does not make span objects: a sampled request leaves a record
(:mod:`~gateway.observability.span_records`), carrying the batches it parents, handed once ended
to the span processor, whose export thread makes the spans (or, for OTLP, their bytes) in bulk.
The standard samplers are decided here by their rule (:class:`Sampling`), without the SDK's
sampler and context objects. A sampled request costs a few attribute stores, random draws and
clock reads; an unsampled one a header lookup; with tracing off nothing at all. The worker's
spans arrive as plain records in the run reply and are exported with the worker's
``process.pid``.
"""

from __future__ import annotations

import importlib.metadata
import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry.sdk.resources import ProcessResourceDetector, Resource
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import SpanKind

from channel.span_wire import WorkerSpans
from channel.telemetry import parse_w3c
from gateway.config.model_config import ConfigError
from gateway.observability.span_export import WIRE_ENCODED, RecordExporter, RecordSpanProcessor
from gateway.observability.span_records import LOW64, Attributes, BatchSpan, Record, ServerSpan


@dataclass(frozen=True)
class Sampling:
    """One of the standard samplers, decided here rather than through the SDK's ``Sampler``
    objects (the same rule; the tests check it against :meth:`sdk`). ``parent_based``: a request
    with a valid parent is sampled when the parent was; otherwise a trace is sampled when the low
    64 bits of its id fall below :attr:`bound` (``TraceIdRatioBased``'s rule; ``ratio`` 1.0 is
    always, 0 never)."""

    parent_based: bool
    ratio: float
    bound: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bound", TraceIdRatioBased.get_bound_for_rate(self.ratio))

    def sampled(self, trace_id: int, parent_flags: int | None) -> bool:
        """Whether to sample ``trace_id`` (``parent_flags``: the parent's W3C trace flags, None
        without a parent)."""
        if parent_flags is not None and self.parent_based:
            return bool(parent_flags & 1)
        return trace_id & LOW64 < self.bound

    def sdk(self) -> Sampler:
        """The SDK sampler with this rule."""
        root: Sampler = TraceIdRatioBased(self.ratio)
        if self.ratio in (0.0, 1.0):
            root = ALWAYS_ON if self.ratio else ALWAYS_OFF
        return ParentBased(root) if self.parent_based else root


class Tracing:
    """Makes span records (see the module doc) and hands each, once ended, to ``processor``
    (which takes records: an SDK span processor over a
    :class:`~gateway.observability.span_export.RecordExporter`)."""

    def __init__(self, processor: SpanProcessor, sampling: Sampling, resource: Resource) -> None:
        self.processor = processor
        self.sampling = sampling
        self.resource = resource
        self.roots = sampling.bound > 0
        """False when no request without a parent can be sampled (then such a request costs
        one header lookup)."""
        self._every_root = sampling.bound > LOW64
        self._bits = random.getrandbits
        self._on_end: Callable[[Record], None] = processor.on_end  # type: ignore[assignment]
        """The processor's ``on_end``, typed for ``ReadableSpan``: it reads only ``context``."""

    @classmethod
    def from_environment(cls, env: Mapping[str, str] = os.environ) -> Tracing | None:
        """Tracing as the ``OTEL_*`` variables ask, or None when off; ConfigError for values
        that cannot be honoured."""
        if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return None
        names = [n.strip() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",")]
        exporters = [_exporter(n, env) for n in names if n and n != "none"]
        sampling = _sampling(env)
        if not exporters or sampling is None:
            return None
        resource = default_resource()
        processors = [RecordSpanProcessor(RecordExporter(e, resource, env)) for e in exporters]
        processor: SpanProcessor = processors[0]
        if len(processors) > 1:
            from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor

            multi = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
            for each in processors:
                multi.add_span_processor(each)
            processor = multi
        return cls(processor, sampling, resource)

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
        if traceparent:
            parsed = parse_w3c(traceparent)
            if parsed is not None:
                trace_id, parent_id = int(parsed[0], 16), int(parsed[1], 16)
                if not self.sampling.sampled(trace_id, parsed[2]):
                    return None
                span_id = self._bits(64) or 1
                state = tracestate or None
                return ServerSpan(
                    name, kind, trace_id, span_id, parent_id, state, start_ns, attributes
                )
        if not self.roots:
            return None
        bits = self._bits(192)  # a root: its trace id and span id in one draw
        trace_id, span_id = bits >> 64 or 1, bits & LOW64 or 1
        if not self._every_root and not self.sampling.sampled(trace_id, None):
            return None
        return ServerSpan(name, kind, trace_id, span_id, 0, None, start_ns, attributes)

    def end(self, span: ServerSpan, end_ns: int, error: str | None = None) -> None:
        """End the server span (status ERROR with ``error``, if given) and hand it on, with the
        batches it owns that have ended (one it owns that is still running is handed on by
        :meth:`end_batch`)."""
        span.end_ns = end_ns
        span.error = error
        for _, batch in span.phases:
            if batch.end_ns > span.done_ns:
                span.done_ns = batch.end_ns
            if batch.owner is span:
                batch.owner = None
                if batch.end_ns:
                    span.carried += (batch,)
        self._on_end(span)

    # -- batches --------------------------------------------------------------------------------
    def start_batch(self, members: Sequence[ServerSpan], start_ns: int) -> BatchSpan:
        """The span of a batch whose sampled members are ``members`` (at least one)."""
        first = members[0]
        links = tuple([(m.trace_id, m.span_id) for m in members[1:]]) if len(members) > 1 else ()
        span_id = self._bits(64) or 1
        return BatchSpan(first.trace_id, span_id, first.span_id, links, start_ns, owner=first)

    def end_batch(
        self, batch: BatchSpan, end_ns: int, attributes: Attributes, worker: WorkerSpans | None
    ) -> None:
        """End a batch's span, with the worker's spans under it; hand it on unless its owner is
        still running (which then carries it: see :meth:`end`)."""
        batch.end_ns = end_ns
        batch.attributes = attributes
        batch.worker = worker
        if batch.owner is None:
            self._on_end(batch)

    def shutdown(self) -> None:
        """Export what is queued and stop (blocks up to the exporters' timeouts)."""
        self.processor.shutdown()


def default_resource() -> Resource:
    """OTel's process attributes, then ``OTEL_RESOURCE_ATTRIBUTES`` / ``OTEL_SERVICE_NAME``
    (service name ``tensorgate`` when neither names one)."""
    resource = ProcessResourceDetector().detect().merge(Resource.create())
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "tensorgate"}))
    return resource


def _exporter(name: str, env: Mapping[str, str]) -> SpanExporter:
    """The exporter ``OTEL_TRACES_EXPORTER`` names (``otlp`` resolved by protocol; the SDK's OTLP
    exporters with :mod:`~gateway.observability.otlp_wire`'s encoding, see
    :mod:`~gateway.observability.span_export`)."""
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


def _sampling(env: Mapping[str, str]) -> Sampling | None:
    """The rule ``OTEL_TRACES_SAMPLER`` / ``_ARG`` name; None: nothing can ever be sampled."""
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
    samplers: dict[str, Sampling | None] = {
        "always_on": Sampling(False, 1.0),
        "always_off": None,
        "traceidratio": Sampling(False, ratio) if ratio > 0 else None,
        "parentbased_always_on": Sampling(True, 1.0),
        "parentbased_always_off": Sampling(True, 0.0),
        "parentbased_traceidratio": Sampling(True, ratio),
    }
    if name not in samplers:
        raise ConfigError(f"OTEL_TRACES_SAMPLER={name!r} is not one of {', '.join(samplers)}")
    return samplers[name]
