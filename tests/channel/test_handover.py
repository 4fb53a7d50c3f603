"""Frames with descriptors over a real Unix socket pair."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from channel import handover
from channel.handover import Decoder, HandoverError


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _receive_all(sock: socket.socket, decoder: Decoder, count: int) -> list[tuple[dict, list[int]]]:
    frames: list[tuple[dict, list[int]]] = []
    while len(frames) < count:
        assert handover.receive(sock, decoder)
        frames.extend(decoder.frames())
    return frames


def test_messages_and_their_descriptors_arrive_in_order(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    handover.send(a, {"op": "one", "n": 1}, [r1])
    handover.send(a, {"op": "none"})
    handover.send(a, {"op": "two"}, [r2, w2])
    for fd in (r1, r2, w2):
        os.close(fd)
    frames = _receive_all(b, Decoder(), 3)
    assert [m for m, _ in frames] == [{"op": "one", "n": 1}, {"op": "none"}, {"op": "two"}]
    assert [len(fds) for _, fds in frames] == [1, 0, 2]
    (got_r1,) = frames[0][1]
    os.write(w1, b"x")
    assert os.read(got_r1, 1) == b"x"  # the descriptor is the pipe sent
    got_r2, got_w2 = frames[2][1]
    os.write(got_w2, b"y")
    assert os.read(got_r2, 1) == b"y"
    for fd in (w1, got_r1, got_r2, got_w2):
        os.close(fd)


def test_a_frame_split_over_reads_is_whole_once_complete() -> None:
    data = handover.frame({"op": "big", "text": "z" * 100_000})
    decoder = Decoder()
    decoder.feed(data[:3])
    assert list(decoder.frames()) == []
    decoder.feed(data[3:50_000])
    assert list(decoder.frames()) == []
    decoder.feed(data[50_000:] + handover.frame({"op": "next"}))
    assert [m["op"] for m, _ in decoder.frames()] == ["big", "next"]


def test_broken_frames_are_refused() -> None:
    decoder = Decoder()
    decoder.feed(handover.HEADER.pack(handover.MAX_PAYLOAD_BYTES + 1, 0))
    with pytest.raises(HandoverError, match="refused"):
        list(decoder.frames())
    decoder = Decoder()
    decoder.feed(handover.frame({"op": "x"}, fds=2))  # announces two, none came
    with pytest.raises(HandoverError, match="announces 2"):
        list(decoder.frames())
    decoder = Decoder()
    decoder.feed(handover.HEADER.pack(2, 0) + b"[]")
    with pytest.raises(HandoverError, match="not a JSON object"):
        list(decoder.frames())
    with pytest.raises(ValueError, match="0 to 64"):
        handover.frame({}, fds=65)


def test_closing_a_decoder_closes_what_it_still_holds() -> None:
    r, w = os.pipe()
    decoder = Decoder()
    decoder.feed(handover.HEADER.pack(100, 1), [r])  # the frame never completes
    assert list(decoder.frames()) == []
    decoder.close()
    with pytest.raises(OSError):
        os.fstat(r)
    os.close(w)


def test_end_of_stream_reads_false(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.close()
    assert handover.receive(b, Decoder()) is False
