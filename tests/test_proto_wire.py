"""Protobuf varints by hand: what ``varint`` writes, ``read_varint`` reads back; a field written
whole or as its head then its payload."""

from __future__ import annotations

import pytest

from gateway.proto_wire import field, field_head, read_varint, varint


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**31 - 1, 2**64 - 1])
def test_read_varint_reads_what_varint_writes(value: int) -> None:
    data = b"\x01" + varint(value) + b"\x02"
    assert read_varint(data, 1) == (value, len(data) - 1)


def test_a_truncated_or_over_long_varint_is_value_error() -> None:
    with pytest.raises(ValueError, match="truncated"):
        read_varint(b"\xc8", 0)
    with pytest.raises(ValueError, match="over-long"):
        read_varint(b"\xff" * 11, 0)


@pytest.mark.parametrize("payload", [b"", b"x", b"y" * 127, b"z" * 128, b"w" * 70_000])
def test_field_head_then_the_payload_is_the_field(payload: bytes) -> None:
    for number in (1, 6, 16):
        assert field_head(number, len(payload)) + payload == field(number, payload)
