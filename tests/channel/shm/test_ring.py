"""The SPSC ring of fixed-size slots, over plain memory (no channel, no doorbells)."""

from __future__ import annotations

import struct

import pytest

from channel.shm.ring import LENGTH_BYTES, ChannelFull, Ring

HEAD, TAIL = 8, 16


def _ring(count: int = 4, size: int = 16) -> tuple[Ring, memoryview, bytearray]:
    words = memoryview(bytearray(8 * 24)).cast("Q")
    slots = bytearray(count * size)
    return Ring(words, HEAD, TAIL, memoryview(slots), count, size), words, slots


def test_messages_come_out_in_order_across_many_wraps() -> None:
    ring, words, _ = _ring(count=3, size=16)
    sent = 0
    for burst in [1, 3, 2, 3, 1, 2] * 20:
        messages = [f"m{sent + i}".encode() for i in range(burst)]
        for message in messages:
            ring.push(message)
        sent += burst
        assert ring.pop(burst) == messages
    assert words[HEAD] == words[TAIL] == sent  # monotonic counters, not slot indices


def test_full_ring_refuses_without_changing_until_a_slot_is_consumed() -> None:
    ring, words, _ = _ring(count=2)
    ring.push(b"a")
    ring.push(b"b")
    with pytest.raises(ChannelFull, match="all 2 ring slots are in use"):
        ring.push(b"c")
    assert (words[HEAD], words[TAIL]) == (2, 0)
    assert ring.pop(1) == [b"a"]
    ring.push(b"c")
    assert ring.pop(2) == [b"b", b"c"]


def test_a_message_may_fill_its_slot_but_not_one_byte_more() -> None:
    ring, words, slots = _ring(count=2, size=16)
    largest = bytes(range(16 - LENGTH_BYTES))
    ring.push(largest)
    with pytest.raises(ValueError, match="message of 13 bytes exceeds the ring slot of 12 bytes"):
        ring.push(b"x" * 13)
    assert words[HEAD] == 1  # the refused message took no slot
    ring.push(b"")
    assert slots[16:20] == struct.pack("<I", 0)  # the full first slot did not spill over
    assert ring.pop(2) == [largest, b""]


def test_corruption_is_detected() -> None:
    ring, words, slots = _ring(count=2, size=16)
    with pytest.raises(RuntimeError, match="doorbell counted more messages than posted"):
        ring.pop(1)
    ring.push(b"ok")
    struct.pack_into("<I", slots, 0, 99)
    with pytest.raises(RuntimeError, match="slot length 99"):
        ring.pop(1)
    assert words[TAIL] == 0
