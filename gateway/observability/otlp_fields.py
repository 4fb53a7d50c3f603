"""Field-level OTLP protobuf encoding: varints, length-delimited fields, attribute values, and
the fixed parts of ``Span`` messages, as :mod:`~gateway.observability.otlp_wire` and
:mod:`~gateway.observability.otlp_templates` write them. Encodings that repeat (attribute pairs,
span names) are cached, each cache bounded.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.trace import SpanKind

from gateway.proto_wire import varint

_DOUBLE = struct.Struct("<d").pack
FIXED64 = struct.Struct("<Q").pack
FIXED32 = struct.Struct("<I").pack
HAS_IS_REMOTE = 0x100
IS_REMOTE = 0x200
EMPTY_STATUS = b"\x7a\x00"
"""Field 15 (status), empty: the SDK always writes a status message, even an UNSET one."""


def delimited(tag: int, payload: bytes) -> bytes:
    """A length-delimited field (``tag`` = field number << 3 | 2, below 128)."""
    size = len(payload)
    if size < 0x80:
        return bytes((tag, size)) + payload
    return bytes((tag,)) + varint(size) + payload


def string_field(tag: int, text: str | None) -> bytes:
    return delimited(tag, text.encode()) if text else b""


def _any_value(value: Any) -> bytes:
    """An ``AnyValue`` message body, as the SDK's ``_encode_value`` maps Python values."""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return delimited(0x0A, value.encode())
    if isinstance(value, int):
        return b"\x18" + varint(value)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE(value)
    if isinstance(value, bytes):
        return delimited(0x3A, value)
    if isinstance(value, Sequence):
        return delimited(0x2A, b"".join(delimited(0x0A, _any_value(v)) for v in value))
    if isinstance(value, Mapping):
        return delimited(0x32, attribute_fields(0x0A, value))
    raise TypeError(f"Invalid type {type(value)} of value {value}")


_CACHED = frozenset((str, bool, int))
"""Value types whose encoding is cached: equal values of one of these types encode alike (not
so for floats: ``0.0 == -0.0``)."""
PAIRS: dict[tuple[int, str, type, Any], bytes] = {}
"""Encoded ``KeyValue`` fields of scalar attributes, by (tag, key, type, value): most repeat
from span to span (model, method, status code). Cleared when it reaches :data:`CACHE_MAX`."""
CACHE_MAX = 4096


def attribute_fields(tag: int, attributes: Mapping[str, Any] | None) -> bytes:
    """Repeated ``KeyValue`` fields under ``tag``."""
    if not attributes:
        return b""
    out = []
    for key, value in attributes.items():
        kind = type(value)
        pair = (tag, key, kind, value) if kind in _CACHED else None
        encoded = PAIRS.get(pair) if pair is not None else None
        if encoded is None:
            encoded = delimited(
                tag, delimited(0x0A, key.encode()) + delimited(0x12, _any_value(value))
            )
            if pair is not None:
                if len(PAIRS) >= CACHE_MAX:
                    PAIRS.clear()
                PAIRS[pair] = encoded
        out.append(encoded)
    return b"".join(out)


def count_field(tag: int, count: int) -> bytes:
    return bytes((tag,)) + varint(count) if count else b""


_KINDS = {kind: bytes((0x30, kind.value + 1)) for kind in SpanKind}
_NAMES: dict[tuple[str, int], bytes] = {}
LOCAL_FLAGS = b"\x85\x01" + FIXED32(HAS_IS_REMOTE)
REMOTE_FLAGS = b"\x85\x01" + FIXED32(HAS_IS_REMOTE | IS_REMOTE)
IDS = struct.Struct(">HQQHQ").pack
"""trace_id (field 1, 16 bytes as two big-endian halves) and span_id (field 2)."""
PARENT_IDS = struct.Struct(">HQQHQHQ").pack
"""The same, then parent_span_id (field 4)."""
TIMES = struct.Struct("<BQBQ").pack
"""start_time_unix_nano (field 7) and end_time_unix_nano (field 8), fixed64."""
INTERNAL = SpanKind.INTERNAL


def name_and_kind(name: str, kind: SpanKind) -> bytes:
    """The ``name`` and ``kind`` fields (cached; keyed by the kind's identity, since hashing an
    enum member runs Python code)."""
    key = (name, id(kind))
    named = _NAMES.get(key)
    if named is None:
        named = string_field(0x2A, name) + _KINDS[kind]
        if len(_NAMES) < CACHE_MAX:
            _NAMES[key] = named
    return named


CHILD_TAIL = EMPTY_STATUS + LOCAL_FLAGS
