"""The binary layouts' primitives: length-prefixed strings and a reader that refuses what does
not parse."""

from __future__ import annotations

import struct

import pytest

from channel.binary import LEN, Malformed, Reader, write_str

HEADER = struct.Struct("<Bqd")


def test_strings_round_trip_as_utf8_after_their_byte_length() -> None:
    out: list[bytes] = []
    write_str(out, "ünï")
    write_str(out, "")
    data = b"".join(out)
    assert data[: LEN.size] == (5).to_bytes(2, "little")  # bytes, not characters
    reader = Reader(data)
    assert (reader.text(), reader.text()) == ("ünï", "")
    reader.end()


def test_a_string_over_65535_bytes_cannot_be_written() -> None:
    with pytest.raises(struct.error):
        write_str([], "x" * 65536)


def test_the_header_checks_the_tag_and_later_errors_name_the_id() -> None:
    data = HEADER.pack(7, 42, 1.5) + b"\xff\xff"
    with pytest.raises(Malformed, match=r"not a thing \(tag 7\)") as caught:
        Reader(data).header(HEADER, 8, "thing")
    assert caught.value.request_id == -1
    reader = Reader(data)
    assert reader.header(HEADER, 7, "thing") == (1.5,)
    assert reader.request_id == 42
    with pytest.raises(Malformed, match="truncated") as caught:
        reader.text()  # a length of 65535 with no bytes behind it
    assert caught.value.request_id == 42


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x01", "truncated binary message"),
        (b"\x02\x00\xff\xfe", "a string is not UTF-8"),
        (b"\x05\x00abc", "truncated binary message"),
    ],
)
def test_what_does_not_parse_is_malformed(data: bytes, message: str) -> None:
    with pytest.raises(Malformed, match=message):
        Reader(data, request_id=3).text()


def test_take_and_end() -> None:
    reader = Reader(b"abcd")
    assert reader.take(3) == b"abc"
    with pytest.raises(Malformed, match="trailing bytes"):
        reader.end()
    with pytest.raises(Malformed, match="truncated"):
        reader.take(2)
    assert reader.take(1) == b"d"
    reader.end()
