"""Declared chunk sizes read off one read's bytes: the line before the chunk's data received."""

from __future__ import annotations

import pytest

from gateway.transport.http.chunks import declared_chunk_size

HEAD = b"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    ("data", "received", "size"),
    [
        (HEAD + b"ffffffff\r\nabc", 3, 0xFFFFFFFF),
        (HEAD + b"10\r\n", 0, 16),
        (HEAD + b"3\r\nabc\r\n4000001;name=value\r\nxy", 2, 0x4000001),
        (b"a\r\n0123456789\r\n20\r\n" + b"\r\n" * 3, 6, 0x20),  # data that looks like framing
        (b"ff\r\nabc", 3, None),  # the line began in an earlier read
        (b"\r\nabc", 3, None),
        (HEAD + b"zz\r\nabc", 3, None),
    ],
)
def test_the_size_line_before_the_chunk_s_data(
    data: bytes, received: int, size: int | None
) -> None:
    assert declared_chunk_size(data, received) == size
