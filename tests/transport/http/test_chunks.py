"""The chunk watch follows HTTP/1.1 request framing across arbitrary reads."""

from __future__ import annotations

import pytest

from gateway.transport.http.chunks import MAX_HEAD_BYTES, ChunkWatch

LIMIT = 1000
CHUNKED = b"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunked(*chunks: bytes, trailers: bytes = b"") -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
    return CHUNKED + body + b"0\r\n" + trailers + b"\r\n"


def feed_split(watch: ChunkWatch, data: bytes, step: int) -> int | None:
    for i in range(0, len(data), step):
        found = watch.feed(data[i : i + step])
        if found is not None:
            return found
    return None


GOOD = (
    chunked(b"a" * 10, b"\r\n" * 3, b"ffffffff")  # data that looks like framing
    + b"POST /p HTTP/1.1\r\nContent-Length: 20\r\n\r\n"
    + b"ffffffffffff\r\n\r\n\r\n\r\n"
    + b"GET /q HTTP/1.1\r\n\r\n"
    + chunked(b"x" * LIMIT, trailers=b"A: b\r\nC: d\r\n")
)


@pytest.mark.parametrize("step", [1, 2, 3, 7, 64, len(GOOD)])
def test_valid_requests_in_any_split_are_never_flagged(step: int) -> None:
    watch = ChunkWatch(LIMIT)
    assert feed_split(watch, GOOD, step) is None
    assert watch.following


@pytest.mark.parametrize("step", [1, 5, 4096])
def test_a_chunk_over_the_limit_is_reported_with_its_declared_size(step: int) -> None:
    watch = ChunkWatch(LIMIT)
    data = GOOD + CHUNKED + b"5\r\nabcde\r\n3E9;name=v\r\n" + b"z" * 10
    assert feed_split(watch, data, step) == LIMIT + 1
    assert not watch.following


def test_the_huge_size_of_the_finding_is_read_in_full() -> None:
    watch = ChunkWatch(LIMIT)
    assert watch.feed(CHUNKED + b"ffffffffffffffff\r\n") == 2**64 - 1


@pytest.mark.parametrize(
    "data",
    [
        CHUNKED + b"-5\r\n",  # not hex
        CHUNKED + b"\r\n",  # empty size line
        CHUNKED + b"1" * 5000,  # a size line longer than any real one
        b"POST /p HTTP/1.1\r\nContent-Length: x1\r\n\r\n",
        b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n",
        b"G" * (MAX_HEAD_BYTES + 1),
    ],
)
def test_it_stops_following_what_it_cannot_read(data: bytes) -> None:
    """aiohttp's parser answers such input; the watch neither flags it nor keeps buffering."""
    watch = ChunkWatch(LIMIT)
    assert watch.feed(data) is None
    assert not watch.following
    assert watch.feed(CHUNKED + b"ffffffff\r\n") is None
