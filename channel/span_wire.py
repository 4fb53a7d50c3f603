"""The binary layout of a worker's spans, as they travel in a traced run's reply.

Span: ``Q start_ns, Q end_ns, Q span_id, Q parent_id, I pid, H attributes; str name;
attributes × (str key, B type (s, i, f, b), value: str, q, d or B)`` (little-endian; strings as
:mod:`channel.binary` writes them). A worker makes spans of the same few forms run after run, so
a form's name and attributes are encoded once (:class:`SpanForm`) and a traced run packs only ids
and times; the gateway keeps spans encoded (:class:`WorkerSpans`) and decodes them on its export
thread, off the request path. Times are Unix epoch nanoseconds.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from channel.binary import Malformed, Reader, write_str

_SPAN: Final = struct.Struct("<QQQQIH")
_INT: Final = struct.Struct("<q")
_BYTE: Final = struct.Struct("<B")
_FLOAT: Final = struct.Struct("<d")


@dataclass(frozen=True, slots=True)
class WorkerSpans:
    """The spans of a traced run as they travel: ``count`` spans in ``data``. The gateway keeps
    them encoded and :meth:`records` decodes them on the export thread, off the request path."""

    count: int
    data: bytes

    @classmethod
    def of(cls, records: Sequence[Mapping[str, Any]]) -> WorkerSpans:
        """``records`` (:class:`channel.telemetry.SpanRecord` values), encoded. ValueError for
        an attribute value that is not a string, integer, finite float or bool."""
        data = b"".join(
            SpanForm.of(r["name"], r["attributes"])
            .spans(r["start_ns"], r["end_ns"], r["span_id"], r["parent_id"], r["pid"])
            .data
            for r in records
        )
        return cls(len(records), data)

    def single(self) -> tuple[int, int, int, int, int, bytes] | None:
        """A run's one span, undecoded: (start, end, span id, parent id, pid, its encoded name
        and attributes, as :meth:`SpanForm.of` wrote them); None unless ``count`` is 1 (it is
        not checked: :meth:`records` decodes and checks)."""
        if self.count != 1 or len(self.data) < _SPAN.size:
            return None
        start_ns, end_ns, span_id, parent_id, pid, _ = _SPAN.unpack_from(self.data)
        return start_ns, end_ns, span_id, parent_id, pid, self.data[_SPAN.size :]

    def records(self) -> list[dict[str, Any]]:
        """The spans, as :class:`channel.telemetry.SpanRecord` values; Malformed if ``data``
        does not hold ``count`` of them."""
        # A run's one span: its name and attributes repeat run after run.
        single = self.single()
        named = single[5] if single is not None else b""
        parsed = _PARSED.get(named) if named else None
        if single is not None and parsed is not None:
            start_ns, end_ns, span_id, parent_id, pid, _ = single
            name, attributes = parsed
            return [_record(pid, name, span_id, parent_id, start_ns, end_ns, dict(attributes))]
        reader = Reader(self.data)
        spans = [read_span(reader) for _ in range(self.count)]
        reader.end()
        if named:
            if len(_PARSED) >= _CACHE_MAX:
                _PARSED.clear()
            _PARSED[named] = (spans[0]["name"], dict(spans[0]["attributes"]))
        return spans


@dataclass(frozen=True, slots=True)
class SpanForm:
    """A span's name and attributes, encoded once: a worker makes spans of the same few forms
    run after run, so a traced run packs only its ids and times (:meth:`spans`)."""

    attributes: int
    named: bytes

    @classmethod
    def of(cls, name: str, attributes: Mapping[str, Any]) -> SpanForm:
        """ValueError for an attribute value that is not a string, integer, finite float or
        bool."""
        return cls(len(attributes), _name_and_attributes(name, attributes))

    def spans(
        self, start_ns: int, end_ns: int, span_id: int, parent_id: int, pid: int
    ) -> WorkerSpans:
        """One span of this form (times in Unix epoch nanoseconds), as it travels."""
        head = _SPAN.pack(start_ns, end_ns, span_id, parent_id, pid, self.attributes)
        return WorkerSpans(1, head + self.named)


_PARSED: dict[bytes, tuple[str, dict[str, Any]]] = {}
"""Encoded name and attributes → (name, attributes), for decoding a run's one span."""
_CACHE_MAX = 1024


def _record(
    pid: int,
    name: str,
    span_id: int,
    parent_id: int,
    start_ns: int,
    end_ns: int,
    attributes: dict[str, Any],
) -> dict[str, Any]:
    return {
        "pid": pid,
        "name": name,
        "span_id": span_id,
        "parent_id": parent_id,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "attributes": attributes,
    }


def _name_and_attributes(name: str, attributes: Mapping[str, Any]) -> bytes:
    out: list[bytes] = []
    write_str(out, name)
    for key, value in attributes.items():
        write_str(out, key)
        if isinstance(value, str):
            out.append(b"s")
            write_str(out, value)
        elif isinstance(value, bool):
            out.append(b"b\x01" if value else b"b\x00")
        elif isinstance(value, int):
            out.append(b"i" + _INT.pack(value))
        elif isinstance(value, float) and math.isfinite(value):
            out.append(b"f" + _FLOAT.pack(value))
        else:
            raise ValueError(f"span attribute {key!r} has a value of type {type(value)}")
    return b"".join(out)


def read_span(reader: Reader) -> dict[str, Any]:
    """The next span in ``reader``, as :class:`channel.telemetry.SpanRecord`."""
    start_ns, end_ns, span_id, parent_id, pid, n_attributes = reader.unpack(_SPAN)
    name = reader.text()
    attributes: dict[str, Any] = {}
    for _ in range(n_attributes):
        key = reader.text()
        (kind,) = reader.unpack(_BYTE)
        if kind == ord("s"):
            attributes[key] = reader.text()
        elif kind == ord("i"):
            (attributes[key],) = reader.unpack(_INT)
        elif kind == ord("f"):
            (attributes[key],) = reader.unpack(_FLOAT)
        elif kind == ord("b"):
            attributes[key] = reader.unpack(_BYTE)[0] == 1
        else:
            raise Malformed(reader.request_id, f"span attribute {key!r} has no type {kind}")
    return _record(pid, name, span_id, parent_id, start_ns, end_ns, attributes)
