"""The OTLP bytes of the request path's usual records, packed whole from templates.

A ``Span`` message whose ids are written as the fixed-width bytes fields they are (16 and 8
bytes) and whose times are fixed64 differs from another of the same shape (name, kind,
attributes, parent or none, status) only in those ids and times: even its lengths are the same.
So the usual records — a server span that queued once, with its ``decode``, ``queue wait`` and
``encode`` children, and a batch span without links — are written with one ``struct`` call each
from a :class:`Template` made on the first record of their shape (kept by shape, bounded).
:func:`server_spans` and :func:`batch_span` return None for a record of any other shape, which
:mod:`~gateway.observability.otlp_wire` then writes field by field: the bytes are the same (the
tests check).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.observability.otlp_fields import (
    CACHE_MAX,
    CHILD_TAIL,
    EMPTY_STATUS,
    INTERNAL,
    LOCAL_FLAGS,
    REMOTE_FLAGS,
    attribute_fields,
    count_field,
    delimited,
    name_and_kind,
    string_field,
)
from gateway.observability.span_records import BatchSpan, ServerSpan
from gateway.proto_wire import varint


class Template:
    """Packs spans of one shape: its literal bytes around the values (ids, times) that change.
    ``pieces`` alternate literal bytes and the ``struct`` code of a value (``16s`` a trace id,
    ``8s`` a span id, ``0s`` an absent one, ``Q`` a time), starting and ending with literals."""

    __slots__ = ("_args", "_struct")

    def __init__(self, pieces: Sequence[bytes | str]) -> None:
        literals = [p for p in pieces[::2] if isinstance(p, bytes)]
        codes = [p for p in pieces[1::2] if isinstance(p, str)]
        if len(literals) != len(codes) + 1 or len(pieces) != 2 * len(codes) + 1:
            raise ValueError("a template alternates literals and value codes")
        layout = "".join(f"{len(lit)}s{code}" for lit, code in zip(literals, codes, strict=False))
        self._struct = struct.Struct(f"<{layout}{len(literals[-1])}s")
        self._args: list[Any] = [None] * len(pieces)
        self._args[::2] = literals

    def pack(self, values: Sequence[Any]) -> bytes:
        """The spans with ``values`` (one per code, in order) in place."""
        args = self._args.copy()
        args[1::2] = values
        return self._struct.pack(*args)


def _span_pieces(parent: bool, named: bytes, after: bytes) -> list[bytes | str]:
    """One ``Span`` field with values trace id, span id, parent id (absent unless ``parent``),
    start, end; ``named``: its name and kind fields; ``after``: its attribute, status and flags
    fields. Its literals are those :func:`~gateway.observability.otlp_wire` writes."""
    size = 46 + (10 if parent else 0) + len(named) + len(after)
    return [
        b"\x12" + varint(size) + b"\x0a\x10",
        "16s",
        b"\x12\x08",
        "8s",
        b"\x22\x08" if parent else b"",
        "8s" if parent else "0s",
        named + b"\x39",
        "Q",
        b"\x41",
        "Q",
        after,
    ]


def _joined(spans: Sequence[list[bytes | str]]) -> list[bytes | str]:
    """The pieces of consecutive spans, each span's last literal joined to the next one's
    first."""
    out: list[bytes | str] = list(spans[0])
    for pieces in spans[1:]:
        last, first = out[-1], pieces[0]
        assert isinstance(last, bytes) and isinstance(first, bytes)
        out[-1] = last + first
        out += pieces[1:]
    return out


_TEMPLATES: dict[tuple[Any, ...], Template] = {}
"""Templates by their shape's key (cleared when it reaches :data:`CACHE_MAX`)."""


def _template(key: tuple[Any, ...], make: Callable[[], Template]) -> Template | None:
    """The template of ``key``'s shape (made by ``make`` on first sight), or None when the key
    cannot be kept (an attribute value that does not hash: a list)."""
    try:
        template = _TEMPLATES.get(key)
    except TypeError:
        return None
    if template is None:
        template = make()
        if len(_TEMPLATES) >= CACHE_MAX:
            _TEMPLATES.clear()
        _TEMPLATES[key] = template
    return template


def _attributes_key(attributes: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a span's attribute fields depend on (types too: ``1 == True == 1.0``)."""
    return (*attributes.items(), *map(type, attributes.values()))


def server_spans(span: ServerSpan) -> bytes | None:
    """The ``Span`` fields of a server span that queued once and whose batch ended (itself,
    then its :meth:`~ServerSpan.children`: ``decode``, ``queue wait`` and ``encode``), or None
    for another shape (no or several queueings, a trace state, a zero time)."""
    if len(span.phases) != 1 or not span.done_ns or span.trace_state:
        return None
    if not span.start_ns or not span.end_ns:
        return None
    parent = span.parent_id != 0
    children = list(span.children())
    key = (
        "server",
        span.name,
        id(span.kind),
        parent,
        span.error,
        *_attributes_key(span.attributes),
    )
    template = _template(key, lambda: _server_template(span, parent, children))
    if template is None:
        return None
    trace = span.trace_id.to_bytes(16, "big")
    own = span.span_id.to_bytes(8, "big")
    parent_id = span.parent_id.to_bytes(8, "big") if parent else b""
    values = [trace, own, parent_id, span.start_ns, span.end_ns]
    for _, child_id, start, end in children:
        values += (trace, child_id.to_bytes(8, "big"), own, start, end)
    return template.pack(values)


def _server_template(
    span: ServerSpan, parent: bool, children: list[tuple[str, int, int, int]]
) -> Template:
    status = EMPTY_STATUS
    if span.error:
        status = delimited(0x7A, string_field(0x12, span.error) + count_field(0x18, 2))
    flags = REMOTE_FLAGS if parent else LOCAL_FLAGS
    after = attribute_fields(0x4A, span.attributes) + status + flags
    spans = [_span_pieces(parent, name_and_kind(span.name, span.kind), after)]
    spans += [
        _span_pieces(True, name_and_kind(name, INTERNAL), CHILD_TAIL) for name, *_ in children
    ]
    return Template(_joined(spans))


def batch_span(batch: BatchSpan) -> bytes | None:
    """The ``Span`` field of a batch span without links, with a parent and both times, or None
    for another."""
    if batch.links or not batch.parent_id or not batch.start_ns or not batch.end_ns:
        return None
    key = ("batch", *_attributes_key(batch.attributes))
    template = _template(key, lambda: _batch_template(batch))
    if template is None:
        return None
    return template.pack(
        (
            batch.trace_id.to_bytes(16, "big"),
            batch.span_id.to_bytes(8, "big"),
            batch.parent_id.to_bytes(8, "big"),
            batch.start_ns,
            batch.end_ns,
        )
    )


def _batch_template(batch: BatchSpan) -> Template:
    after = attribute_fields(0x4A, batch.attributes) + EMPTY_STATUS + LOCAL_FLAGS
    return Template(_span_pieces(True, name_and_kind("batch", INTERNAL), after))
