"""The binary layout of the two hot messages, ``run`` and its successful reply.

:mod:`channel.messages` defines every message and is the only caller: it sends these two in
this layout and every other message (load, ping, errors, ...) as JSON, which never starts with
the tag bytes below. All integers little-endian; strings UTF-8 with a uint16 length before them.

Run request (tag ``0x01``)::

    B tag, q id, B flags (1: deadline, 2: outputs listed, 4: traced), d deadline,
    H inputs, H outputs; str key, str signature, [Q trace id high, Q trace id low, Q span id];
    inputs × tensor; outputs × str

Run reply (tag ``0x02``)::

    B tag, q id, B flags (1: spans), Q out_end, d compute_us, H outputs;
    outputs × tensor; [H spans, I bytes, spans × span]

Span: ``Q start_ns, Q end_ns, Q span_id, Q parent_id, I pid, H attributes; str name;
attributes × (str key, B type (s, i, f, b), value: str, q, d or B)``.

Tensor: ``B dtype index (in :data:`DTYPE_ORDER`), B rank, Q offset, Q nbytes, rank × Q dims, str
name``. Decoding raises :class:`Malformed` (with the id once it is known) for anything that does
not parse; the caller maps it to its own error.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from channel.dtypes import DTYPE_NAMES

RUN_TAG: Final = 0x01
RUN_REPLY_TAG: Final = 0x02
DTYPE_ORDER: Final = tuple(sorted(DTYPE_NAMES))
"""Wire index → dtype name (both ends run the same code, so the order is shared)."""
_DTYPE_INDEX: Final = {name: i for i, name in enumerate(DTYPE_ORDER)}

_RUN: Final = struct.Struct("<BqBdHH")
_REPLY: Final = struct.Struct("<BqBQdH")
_TENSOR: Final = struct.Struct("<BBQQ")
_LEN: Final = struct.Struct("<H")
_SPAN: Final = struct.Struct("<QQQQIH")
_SPANS: Final = struct.Struct("<HI")
_INT: Final = struct.Struct("<q")
_BYTE: Final = struct.Struct("<B")
_FLOAT: Final = struct.Struct("<d")
_TRACE: Final = struct.Struct("<QQQ")
_LOW64: Final = (1 << 64) - 1
_HAS_DEADLINE, _HAS_OUTPUTS, _HAS_TRACE = 1, 2, 4
_HAS_SPANS = 1


@functools.cache
def _dims(rank: int) -> struct.Struct:
    return struct.Struct(f"<{rank}Q")


class Malformed(ValueError):
    """Bytes that do not hold a message of this layout; ``request_id`` is -1 until read."""

    def __init__(self, request_id: int, message: str) -> None:
        super().__init__(message)
        self.request_id = request_id


# -- encoding ---------------------------------------------------------------------------------


def _str(out: list[bytes], text: str) -> None:
    data = text.encode()
    out.append(_LEN.pack(len(data)))
    out.append(data)


def _tensors(out: list[bytes], tensors: Sequence[Mapping[str, Any]]) -> None:
    for t in tensors:
        shape = t["shape"]
        out.append(_TENSOR.pack(_DTYPE_INDEX[t["dtype"]], len(shape), t["offset"], t["nbytes"]))
        out.append(_dims(len(shape)).pack(*shape))
        _str(out, t["name"])


def encode_run(request: Mapping[str, Any]) -> bytes:
    """A ``run`` request (as :func:`channel.messages.run_request` builds it). ValueError for a
    non-finite deadline; struct.error / KeyError for fields out of range."""
    deadline, outputs = request["deadline"], request["outputs"]
    trace = request.get("trace")
    if deadline is not None and not math.isfinite(deadline):
        raise ValueError(f"deadline must be finite, got {deadline}")
    flags = (
        (_HAS_DEADLINE if deadline is not None else 0)
        | (_HAS_OUTPUTS if outputs is not None else 0)
        | (_HAS_TRACE if trace is not None else 0)
    )
    inputs = request["inputs"]
    out = [
        _RUN.pack(
            RUN_TAG,
            request["id"],
            flags,
            0.0 if deadline is None else deadline,
            len(inputs),
            0 if outputs is None else len(outputs),
        )
    ]
    _str(out, request["key"])
    _str(out, request["signature"])
    if trace is not None:
        trace_id, span_id = trace
        out.append(_TRACE.pack(trace_id >> 64, trace_id & _LOW64, span_id))
    _tensors(out, inputs)
    for name in outputs or ():
        _str(out, name)
    return b"".join(out)


def encode_run_reply(reply: Mapping[str, Any]) -> bytes:
    """A successful ``run`` reply (as :func:`channel.messages.run_reply` builds it), with its
    spans when present (traced runs only)."""
    spans = reply.get("spans")
    outputs = reply["outputs"]
    flags = _HAS_SPANS if spans is not None else 0
    out = [
        _REPLY.pack(
            RUN_REPLY_TAG, reply["id"], flags, reply["out_end"], reply["compute_us"], len(outputs)
        )
    ]
    _tensors(out, outputs)
    if spans is not None:
        out.append(_SPANS.pack(spans.count, len(spans.data)))
        out.append(spans.data)
    return b"".join(out)


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
        reader = _Reader(self.data)
        spans = [reader.span() for _ in range(self.count)]
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
    _str(out, name)
    for key, value in attributes.items():
        _str(out, key)
        if isinstance(value, str):
            out.append(b"s")
            _str(out, value)
        elif isinstance(value, bool):
            out.append(b"b\x01" if value else b"b\x00")
        elif isinstance(value, int):
            out.append(b"i" + _INT.pack(value))
        elif isinstance(value, float) and math.isfinite(value):
            out.append(b"f" + _FLOAT.pack(value))
        else:
            raise ValueError(f"span attribute {key!r} has a value of type {type(value)}")
    return b"".join(out)


# -- decoding ---------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, request_id: int = -1) -> None:
        self.data = data
        self.at = 0
        self.request_id = request_id

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...]:
        try:
            values = layout.unpack_from(self.data, self.at)
        except struct.error:
            raise Malformed(self.request_id, "truncated binary message") from None
        self.at += layout.size
        return values

    def take(self, length: int) -> bytes:
        end = self.at + length
        if end > len(self.data):
            raise Malformed(self.request_id, "truncated binary message")
        data = self.data[self.at : end]
        self.at = end
        return data

    def text(self) -> str:
        (length,) = self.unpack(_LEN)
        try:
            return self.take(length).decode()
        except UnicodeDecodeError:
            raise Malformed(self.request_id, "a string is not UTF-8") from None

    def tensors(self, count: int) -> list[dict[str, Any]]:
        tensors = []
        for _ in range(count):
            dtype, rank, offset, nbytes = self.unpack(_TENSOR)
            if dtype >= len(DTYPE_ORDER):
                raise Malformed(self.request_id, f"unknown dtype index {dtype}")
            shape = list(self.unpack(_dims(rank)))
            name = self.text()
            tensors.append(
                {
                    "name": name,
                    "dtype": DTYPE_ORDER[dtype],
                    "shape": shape,
                    "offset": offset,
                    "nbytes": nbytes,
                }
            )
        return tensors

    def header(self, layout: struct.Struct, tag: int, what: str) -> tuple[Any, ...]:
        """The fixed header (``layout``: tag, id, then the rest); Malformed unless its tag is
        ``tag``. Later errors name the id."""
        fields = self.unpack(layout)
        if fields[0] != tag:
            raise Malformed(-1, f"not a {what} (tag {fields[0]})")
        self.request_id = fields[1]
        return fields[2:]

    def span(self) -> dict[str, Any]:
        """One span of a run reply, as :class:`channel.telemetry.SpanRecord`."""
        start_ns, end_ns, span_id, parent_id, pid, n_attributes = self.unpack(_SPAN)
        name = self.text()
        attributes: dict[str, Any] = {}
        for _ in range(n_attributes):
            key = self.text()
            (kind,) = self.unpack(_BYTE)
            if kind == ord("s"):
                attributes[key] = self.text()
            elif kind == ord("i"):
                (attributes[key],) = self.unpack(_INT)
            elif kind == ord("f"):
                (attributes[key],) = self.unpack(_FLOAT)
            elif kind == ord("b"):
                attributes[key] = self.unpack(_BYTE)[0] == 1
            else:
                raise Malformed(self.request_id, f"span attribute {key!r} has no type {kind}")
        return _record(pid, name, span_id, parent_id, start_ns, end_ns, attributes)

    def end(self) -> None:
        if self.at != len(self.data):
            raise Malformed(self.request_id, "trailing bytes after a binary message")


def decode_run(data: bytes) -> dict[str, Any]:
    """The ``run`` request :func:`encode_run` wrote; Malformed if ``data`` is not one."""
    reader = _Reader(data)
    flags, deadline, n_inputs, n_outputs = reader.header(_RUN, RUN_TAG, "run request")
    request: dict[str, Any] = {"op": "run", "id": reader.request_id, "key": reader.text()}
    request["signature"] = reader.text()
    if flags & _HAS_TRACE:
        high, low, span_id = reader.unpack(_TRACE)
        request["trace"] = (high << 64 | low, span_id)
    request["inputs"] = reader.tensors(n_inputs)
    names = [reader.text() for _ in range(n_outputs)]
    request["outputs"] = names if flags & _HAS_OUTPUTS else None
    request["deadline"] = deadline if flags & _HAS_DEADLINE else None
    reader.end()
    return request


def decode_run_reply(data: bytes) -> dict[str, Any]:
    """The reply :func:`encode_run_reply` wrote; Malformed if ``data`` is not one."""
    reader = _Reader(data)
    flags, out_end, compute_us, n_outputs = reader.header(_REPLY, RUN_REPLY_TAG, "run reply")
    request_id = reader.request_id
    reply: dict[str, Any] = {"id": request_id, "ok": True}
    reply["outputs"] = reader.tensors(n_outputs)
    reply["out_end"] = out_end
    reply["compute_us"] = compute_us
    if flags & _HAS_SPANS:
        count, length = reader.unpack(_SPANS)
        reply["spans"] = WorkerSpans(count, reader.take(length))
    reader.end()
    return reply
