"""Sampled spans as the request path records them, and their OpenTelemetry form.

A sampled request leaves a :class:`ServerSpan` record (its server span, and the ``decode``,
``queue wait`` and ``encode`` children derived from its timestamps), and each batch a
:class:`BatchSpan` (the batch's span and the worker's spans under it). A record is handed whole to
the span processor once it ends; a batch that ends before its parent request (the usual case)
travels inside that request's record, so a request costs one hand-off. Making a record costs a
few attribute stores and random draws; the span objects and their encoding are left to the export
thread (:class:`~gateway.observability.span_export.RecordExporter`), which turns records into
``ReadableSpan`` values (:class:`SpanForms`) or, for the OTLP exporters, straight into bytes
(:mod:`~gateway.observability.otlp_wire`). Times are Unix epoch nanoseconds, ids integers.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags, TraceState
from opentelemetry.trace.status import Status, StatusCode

from channel.binary import Malformed
from channel.span_wire import WorkerSpans
from channel.telemetry import SpanRecord

log = logging.getLogger(__name__)

Attributes = dict[str, Any]
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
SCOPE = InstrumentationScope("tensorgate")
UNSET = Status(StatusCode.UNSET)
LOW64 = (1 << 64) - 1
QUEUED = SpanContext(1, 1, False, SAMPLED)
"""What the SDK's span processors read of a record before queueing it (``context.trace_flags``):
every record is of a sampled request."""


@dataclass(slots=True, eq=False)
class BatchSpan:
    """A batch's span: child of its first sampled member (``parent_id``), linked to the others
    (``links``: their (trace id, span id)). ``worker``: the worker's spans, as they came (None:
    the run failed or was not traced). ``owner``: that first member while it runs (it carries
    the batch if the batch ends first), then None."""

    trace_id: int
    span_id: int
    parent_id: int
    links: tuple[tuple[int, int], ...]
    start_ns: int
    end_ns: int = 0
    attributes: Attributes = field(default_factory=dict)
    worker: WorkerSpans | None = None
    owner: ServerSpan | None = None
    context: ClassVar[SpanContext] = QUEUED

    def worker_records(self) -> list[SpanRecord]:
        """The worker's spans, decoded (none, with a warning, if they do not decode)."""
        if self.worker is None:
            return []
        try:
            return self.worker.records()  # type: ignore[return-value]
        except Malformed as exc:
            log.warning("Dropped the worker's spans of a batch: %s", exc)
            return []


@dataclass(slots=True, eq=False)
class ServerSpan:
    """A sampled request's server span. ``parent_id``: the caller's span (0: a root);
    ``trace_state``: the caller's ``tracestate`` header; ``phases``: (enqueued, batch) per batch
    the request joined; ``done_ns``: when the last of those batches ended (0: none did);
    ``child_ids``: 64 random bits per derived child span (0: not drawn yet, see
    :meth:`children`); ``error``: the status description (None: not an error); ``carried``:
    the batches it owns that ended before it did (their spans travel in this record)."""

    name: str
    kind: SpanKind
    trace_id: int
    span_id: int
    parent_id: int
    trace_state: str | None
    start_ns: int
    attributes: Attributes
    phases: list[tuple[int, BatchSpan]] = field(default_factory=list)
    end_ns: int = 0
    done_ns: int = 0
    child_ids: int = 0
    error: str | None = None
    carried: tuple[BatchSpan, ...] = ()
    context: ClassVar[SpanContext] = QUEUED

    @property
    def ids(self) -> tuple[str, str]:
        """(trace id, span id) in hex, as the log format writes them."""
        return f"{self.trace_id:032x}", f"{self.span_id:016x}"

    def children(self) -> Iterator[tuple[str, int, int, int]]:
        """The derived child spans, as (name, span id, start, end): ``decode`` (until the first
        queueing), ``queue wait`` per batch joined, ``encode`` (from the last batch's end). Their
        ids are drawn on the first call (on the export thread) and kept."""
        if not self.phases:
            return
        bits = self.child_ids
        if not bits:  # drawn here, off the request path, on first use
            bits = self.child_ids = random.getrandbits(64 * (len(self.phases) + 2))
        spans = [("decode", self.start_ns, self.phases[0][0])]
        spans += [("queue wait", enqueued, batch.start_ns) for enqueued, batch in self.phases]
        if self.done_ns:
            spans.append(("encode", self.done_ns, self.end_ns))
        for index, (name, start, end) in enumerate(spans):
            yield name, (bits >> (64 * index)) & LOW64 or 1, start, max(start, end)


Record = ServerSpan | BatchSpan


def trace_state_text(state: TraceState | None) -> str:
    """A trace state as OTLP's ``trace_state`` field holds it (the SDK's encoding; "" for
    none)."""
    return ",".join(f"{k}={v}" for k, v in state.items()) if state else ""


def span_count(record: Record) -> int:
    """How many spans ``record`` stands for."""
    if isinstance(record, ServerSpan):
        phases = len(record.phases)
        carried = sum(map(span_count, record.carried)) if record.carried else 0
        return 1 + (phases + 1 + (record.done_ns > 0) if phases else 0) + carried
    return 1 + (record.worker.count if record.worker is not None else 0)


class SpanForms:
    """Turns records into ``ReadableSpan`` values: the gateway's spans under ``resource``, the
    worker's under the same resource with that worker's ``process.pid``."""

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        self._workers: dict[int, Resource] = {}
        self._states: dict[str, tuple[TraceState, str]] = {}

    def spans(self, record: Record) -> list[ReadableSpan]:
        if isinstance(record, ServerSpan):
            return self._server(record)
        return self._batch(record)

    def worker_resource(self, pid: int) -> Resource:
        """The gateway's resource with the worker's process attributes."""
        resource = self._workers.get(pid)
        if resource is None:
            kept = {
                k: v for k, v in self.resource.attributes.items() if not k.startswith("process.")
            }
            kept.update({"process.pid": pid, "process.parent_pid": os.getpid()})
            resource = self._workers[pid] = Resource(kept, self.resource.schema_url)
        return resource

    def trace_state(self, header: str | None) -> TraceState | None:
        """The caller's ``tracestate`` header as W3C parsing keeps it."""
        return None if header is None else self._state(header)[0]

    def state_text(self, header: str | None) -> str:
        """That trace state as OTLP writes it ("" for none)."""
        return "" if header is None else self._state(header)[1]

    def _state(self, header: str) -> tuple[TraceState, str]:
        hit = self._states.get(header)
        if hit is None:
            if len(self._states) >= 1024:  # callers repeat a few states; bound the rest
                self._states.clear()
            state = TraceState.from_header([header])
            hit = self._states[header] = (state, trace_state_text(state))
        return hit

    def _server(self, span: ServerSpan) -> list[ReadableSpan]:
        context = SpanContext(
            span.trace_id, span.span_id, False, SAMPLED, self.trace_state(span.trace_state)
        )
        parent = None
        if span.parent_id:
            parent = SpanContext(span.trace_id, span.parent_id, True, SAMPLED)
        status = Status(StatusCode.ERROR, span.error) if span.error else UNSET
        out = [
            self._readable(
                span.name,
                context,
                parent,
                span.start_ns,
                span.end_ns,
                span.attributes,
                kind=span.kind,
                status=status,
            )
        ]
        for name, child_id, start, end in span.children():
            child = SpanContext(span.trace_id, child_id, False, SAMPLED)
            out.append(self._readable(name, child, context, start, end, {}))
        for batch in span.carried:
            out += self._batch(batch)
        return out

    def _batch(self, batch: BatchSpan) -> list[ReadableSpan]:
        context = SpanContext(batch.trace_id, batch.span_id, False, SAMPLED)
        parent = SpanContext(batch.trace_id, batch.parent_id, False, SAMPLED)
        links = [Link(SpanContext(t, s, False, SAMPLED)) for t, s in batch.links]
        out = [
            self._readable(
                "batch",
                context,
                parent,
                batch.start_ns,
                batch.end_ns,
                batch.attributes,
                links=links,
            )
        ]
        for record in batch.worker_records():
            out.append(
                self._readable(
                    record["name"],
                    SpanContext(batch.trace_id, record["span_id"], False, SAMPLED),
                    SpanContext(batch.trace_id, record["parent_id"], False, SAMPLED),
                    record["start_ns"],
                    record["end_ns"],
                    dict(record["attributes"]),
                    resource=self.worker_resource(record["pid"]),
                )
            )
        return out

    def _readable(
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
        links: list[Link] | None = None,
        resource: Resource | None = None,
    ) -> ReadableSpan:
        return ReadableSpan(
            name=name,
            context=context,
            parent=parent,
            resource=resource or self.resource,
            attributes=attributes,
            links=links or (),
            kind=kind,
            status=status,
            start_time=start_ns,
            end_time=end_ns,
            instrumentation_scope=SCOPE,
        )
