"""Protobuf's wire format, the few pieces the hot paths read and write by hand: varints and
length-delimited fields (what TF Serving's Predict, V2's ModelInfer and OTLP answers are made of,
and TensorFlow's string ``tensor_content``).
"""

from __future__ import annotations

LEN = 2
"""Wire type of a length-delimited field."""

_SMALL = [bytes((n,)) for n in range(0x80)]


def varint(value: int) -> bytes:
    """Protobuf varint encoding of ``value`` (a negative one as its 64-bit two's complement)."""
    if value < 0:
        value += 1 << 64
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The varint at ``data[pos:]`` and the position after it; ValueError when ``data`` ends
    inside it or it runs over 10 bytes (64 bits)."""
    value = shift = 0
    while pos < len(data) and shift < 70:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    raise ValueError("truncated or over-long varint")


def field_head(number: int, length: int) -> bytes:
    """A length-delimited field's bytes before its payload: its tag and the payload's length
    (a large payload can then be joined after it without a copy into the field)."""
    return varint(number << 3 | LEN) + varint(length)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload (:func:`field_head`'s
    bytes then the payload, written inline: no further call per field on the hot paths)."""
    return varint(number << 3 | LEN) + varint(len(payload)) + payload
