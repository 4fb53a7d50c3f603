"""Protobuf's wire format, the few pieces the hot paths write by hand: varints and
length-delimited fields (what TF Serving's Predict, V2's ModelInfer and OTLP answers are made of).
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


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    return varint(number << 3 | LEN) + varint(len(payload)) + payload
