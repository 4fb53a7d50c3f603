"""A direct protobuf wire encoder for OTLP's ``ExportTraceServiceRequest``.

It writes the bytes the SDK's ``encode_spans`` writes (the tests check them field for field) from
``ReadableSpan`` values (:func:`encode_request`) or straight from the request path's records
(:func:`encode_records`, without making span objects), each resource and scope encoded once.
Unlike the SDK's encoder, it builds no protobuf object per span, attribute or value (``python -m
bench otlp`` compares their CPU: 0.06–0.07× the SDK's per span in
``bench/results/2026-11-28-otlp/``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from gateway.observability.otlp_fields import (
    CACHE_MAX,
    CHILD_TAIL,
    EMPTY_STATUS,
    FIXED32,
    FIXED64,
    HAS_IS_REMOTE,
    IDS,
    INTERNAL,
    IS_REMOTE,
    LOCAL_FLAGS,
    PARENT_IDS,
    REMOTE_FLAGS,
    TIMES,
    attribute_fields,
    count_field,
    delimited,
    name_and_kind,
    string_field,
)
from gateway.observability.otlp_templates import batch_span, server_spans
from gateway.observability.span_records import (
    LOW64,
    SCOPE,
    BatchSpan,
    Record,
    ServerSpan,
    SpanForms,
    trace_state_text,
)


def _message(
    trace_id: int,
    span_id: int,
    parent_id: int,
    remote_parent: bool,
    state: str,
    name: str,
    kind: SpanKind,
    start: int,
    end: int,
    attributes: Mapping[str, Any] | None,
    middle: bytes = b"",
    error: str | None = None,
    code: int = 0,
) -> bytes:
    """One ``Span`` field, fields in number order. ``parent_id`` 0: no parent; ``state``: the
    trace state as text ("" for none); ``middle``: fields 10 to 14 (dropped attributes, events,
    links), already encoded; ``code``/``error``: the status (0/None: unset)."""
    if parent_id and not state:
        ids = PARENT_IDS(
            0x0A10, trace_id >> 64, trace_id & LOW64, 0x1208, span_id, 0x2208, parent_id
        )
    else:
        ids = IDS(0x0A10, trace_id >> 64, trace_id & LOW64, 0x1208, span_id)
        if state:
            ids += string_field(0x1A, state)
        if parent_id:
            ids += b"\x22\x08" + parent_id.to_bytes(8, "big")
    named = name_and_kind(name, kind)
    if start and end:
        times = TIMES(0x39, start, 0x41, end)
    else:
        times = (b"\x39" + FIXED64(start) if start else b"") + (
            b"\x41" + FIXED64(end) if end else b""
        )
    status = EMPTY_STATUS
    if code or error:
        status = delimited(0x7A, string_field(0x12, error) + count_field(0x18, code))
    flags = REMOTE_FLAGS if parent_id and remote_parent else LOCAL_FLAGS
    body = b"".join((ids, named, times, attribute_fields(0x4A, attributes), middle, status, flags))
    return delimited(0x12, body)


def _child(
    trace_id: int,
    span_id: int,
    parent_id: int,
    named: bytes,
    start: int,
    end: int,
    tail: bytes = CHILD_TAIL,
) -> bytes:
    """What :func:`_message` writes for an INTERNAL span with a local parent, no trace state,
    links or status, in fewer steps: ``named``, its :func:`name_and_kind` fields; ``tail``, its
    attribute fields then :data:`CHILD_TAIL` (a server span's derived children have none)."""
    high, low = trace_id >> 64, trace_id & LOW64
    ids = PARENT_IDS(0x0A10, high, low, 0x1208, span_id, 0x2208, parent_id)
    body = b"".join((ids, named, TIMES(0x39, start, 0x41, end), tail))
    return bytes((0x12, len(body))) + body if len(body) < 0x80 else delimited(0x12, body)


def _link(trace_id: int, span_id: int, remote: bool, middle: bytes = b"") -> bytes:
    """One ``Link`` field (``middle``: its attributes and dropped count, encoded)."""
    body = IDS(0x0A10, trace_id >> 64, trace_id & LOW64, 0x1208, span_id) + middle
    flags = HAS_IS_REMOTE | (IS_REMOTE if remote else 0)
    return delimited(0x6A, body + b"\x35" + FIXED32(flags))


def _span(span: ReadableSpan) -> bytes:
    context = span.context
    parent = span.parent
    middle = [count_field(0x50, span.dropped_attributes)]
    for event in span.events:
        body = b"\x09" + FIXED64(event.timestamp) + string_field(0x12, event.name)
        body += attribute_fields(0x1A, event.attributes) + count_field(
            0x20, event.dropped_attributes
        )
        middle.append(delimited(0x5A, body))
    middle.append(count_field(0x60, span.dropped_events))
    for link in span.links:
        linked = link.context
        attributes = attribute_fields(0x22, link.attributes) + count_field(
            0x28, link.dropped_attributes
        )
        middle.append(_link(linked.trace_id, linked.span_id, linked.is_remote, attributes))
    middle.append(count_field(0x70, span.dropped_links))
    status = span.status
    return _message(
        context.trace_id,
        context.span_id,
        parent.span_id if parent is not None else 0,
        parent is not None and parent.is_remote,
        trace_state_text(context.trace_state),
        span.name,
        span.kind,
        span.start_time or 0,
        span.end_time or 0,
        span.attributes,
        b"".join(middle),
        status.description,
        status.status_code.value,
    )


def _record(
    record: Record, forms: SpanForms, gateway: list[bytes], workers: dict[int, list[bytes]]
) -> None:
    """Append the spans of ``record``: the gateway's to ``gateway``, the worker's to ``workers``
    (by process id); packed whole when :mod:`~gateway.observability.otlp_templates` knows the
    shape, else field by field."""
    if isinstance(record, ServerSpan):
        packed = server_spans(record)
        if packed is not None:
            gateway.append(packed)
        else:
            _server_fields(record, forms, gateway)
        for batch in record.carried:
            _record(batch, forms, gateway, workers)
        return
    gateway.append(batch_span(record) or _batch_fields(record))
    _worker_spans(record, workers)


def _server_fields(record: ServerSpan, forms: SpanForms, gateway: list[bytes]) -> None:
    trace_id, span_id = record.trace_id, record.span_id
    gateway.append(
        _message(
            trace_id,
            span_id,
            record.parent_id,
            True,
            forms.state_text(record.trace_state),
            record.name,
            record.kind,
            record.start_ns,
            record.end_ns,
            record.attributes,
            error=record.error,
            code=2 if record.error else 0,
        )
    )
    for name, child_id, start, end in record.children():
        gateway.append(
            _child(trace_id, child_id, span_id, name_and_kind(name, INTERNAL), start, end)
        )


def _batch_fields(record: BatchSpan) -> bytes:
    links = b"".join(_link(t, s, False) for t, s in record.links)
    return _message(
        record.trace_id,
        record.span_id,
        record.parent_id,
        False,
        "",
        "batch",
        INTERNAL,
        record.start_ns,
        record.end_ns,
        record.attributes,
        links,
    )


def _worker_spans(record: BatchSpan, workers: dict[int, list[bytes]]) -> None:
    """Append the worker's spans of a batch to ``workers``, by process id."""
    trace_id = record.trace_id
    worker = record.worker
    single = worker.single() if worker is not None else None
    if single is not None:
        start, end, span_id, parent_id, pid, named = single
        form = _WORKER_FORMS.get(named)
        if form is not None and parent_id:
            encoded = _child(trace_id, span_id, parent_id, form[0], start, end, form[1])
            workers.setdefault(pid, []).append(encoded)
            return
    for span in record.worker_records():
        if single is not None and len(_WORKER_FORMS) < CACHE_MAX:
            tail = attribute_fields(0x4A, span["attributes"]) + CHILD_TAIL
            _WORKER_FORMS[single[5]] = (name_and_kind(span["name"], INTERNAL), tail)
        workers.setdefault(span["pid"], []).append(
            _message(
                trace_id,
                span["span_id"],
                span["parent_id"],
                False,
                "",
                span["name"],
                INTERNAL,
                span["start_ns"],
                span["end_ns"],
                span["attributes"],
            )
        )


_WORKER_FORMS: dict[bytes, tuple[bytes, bytes]] = {}
"""A run's one worker span, by its name and attributes as the worker encoded them
(:meth:`~channel.wire.WorkerSpans.single`) → its ``name`` and ``kind`` fields, and its attribute,
status and flags fields: the worker makes spans of a few forms, run after run. Filled once a form
has decoded (so holds valid forms only)."""


class _Heads:
    """Encoded ``Resource`` and ``InstrumentationScope`` fields, once per object (both are
    long-lived: the gateway's resource, one per worker process, one scope)."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[object, bytes, bytes]] = {}

    def resource(self, resource: Any) -> tuple[bytes, bytes]:
        """(the ``resource`` field, the ``schema_url`` field) of a ``ResourceSpans``."""
        hit = self._cache.get(id(resource))
        if hit is None or hit[0] is not resource:
            body = attribute_fields(0x0A, resource.attributes)
            hit = (resource, delimited(0x0A, body), string_field(0x1A, resource.schema_url))
            self._cache[id(resource)] = hit
        return hit[1], hit[2]

    def scope(self, scope: Any) -> tuple[bytes, bytes]:
        """(the ``scope`` field, the ``schema_url`` field) of a ``ScopeSpans``."""
        hit = self._cache.get(id(scope))
        if hit is None or hit[0] is not scope:
            if scope is None:
                hit = (scope, delimited(0x0A, b""), b"")
            else:
                body = string_field(0x0A, scope.name) + string_field(0x12, scope.version)
                body += attribute_fields(0x1A, scope.attributes)
                hit = (scope, delimited(0x0A, body), string_field(0x1A, scope.schema_url))
            self._cache[id(scope)] = hit
        return hit[1], hit[2]


_HEADS = _Heads()


def encode_request(spans: Sequence[ReadableSpan]) -> bytes:
    """The serialized ``ExportTraceServiceRequest`` of ``spans``, grouped by resource, then
    scope, in first-seen order (as the SDK's ``encode_spans``)."""
    groups: dict[int, tuple[Any, dict[int, tuple[Any, list[bytes]]]]] = {}
    for span in spans:
        resource, scope = span.resource, span.instrumentation_scope or None
        scopes = groups.setdefault(id(resource), (resource, {}))[1]
        scopes.setdefault(id(scope), (scope, []))[1].append(_span(span))
    return _assemble((resource, scopes.values()) for resource, scopes in groups.values())


def encode_records(records: Sequence[Record], forms: SpanForms) -> bytes:
    """The serialized ``ExportTraceServiceRequest`` of the spans ``records`` stand for: the same
    bytes as :func:`encode_request` of ``forms.spans`` of each, without making those spans."""
    gateway: list[bytes] = []
    workers: dict[int, list[bytes]] = {}
    for record in records:
        _record(record, forms, gateway, workers)
    groups = [(forms.resource, gateway)] if gateway else []
    groups += [(forms.worker_resource(pid), spans) for pid, spans in workers.items()]
    return _assemble((resource, ((SCOPE, spans),)) for resource, spans in groups)


def _assemble(groups: Iterable[tuple[Any, Iterable[tuple[Any, list[bytes]]]]]) -> bytes:
    """``ResourceSpans`` fields of (resource, [(scope, encoded spans)]) groups, joined."""
    out = []
    for resource, scopes in groups:
        head, schema = _HEADS.resource(resource)
        body = [head]
        for scope, encoded in scopes:
            scope_head, scope_schema = _HEADS.scope(scope)
            body.append(delimited(0x12, scope_head + b"".join(encoded) + scope_schema))
        body.append(schema)
        out.append(delimited(0x0A, b"".join(body)))
    return b"".join(out)
