"""A single-producer / single-consumer ring of fixed-size slots, each holding one message.

The ring's slots live in shared memory; its monotonic ``head`` (written only by the producer) and
``tail`` (written only by the consumer) are uint64 words of the channel header. Each slot holds a
little-endian uint32 length and the message's bytes (their encoding is
:mod:`channel.messages`'s business). The producer stores ``head`` after the slot's bytes and
the consumer loads ``head`` before them, so a consumer never sees a half-written slot; the
consumer stores ``tail`` after reading the slots and the producer loads it before writing them
again, so no slot is overwritten while it is read. The fences of :mod:`channel.shm.fences` make
both orders hold on any CPU (x86-64 gives them for free; arm64 does not).
"""

from __future__ import annotations

import struct
from typing import Final

from channel.shm import fences

LENGTH_BYTES: Final = 4
"""Bytes of each slot taken by the length prefix: a message may fill ``slot_bytes - 4``."""
_LENGTH: Final = struct.Struct("<I")


class ChannelFull(Exception):
    """A ring has no free slot (the producer has more messages outstanding than slots)."""


class Ring:
    """One SPSC ring of ``count`` slots of ``size`` bytes over ``slots``; the producer owns
    ``words[head]``, the consumer ``words[tail]`` (monotonic message counts)."""

    def __init__(
        self, words: memoryview, head: int, tail: int, slots: memoryview, count: int, size: int
    ) -> None:
        self._words = words
        self._head = head
        self._tail = tail
        self._slots = slots
        self._count = count
        self._size = size

    def push(self, data: bytes) -> None:
        """Copy ``data`` into the next slot. ChannelFull when every slot is unconsumed,
        ValueError when it exceeds a slot; the ring is unchanged either way."""
        if len(data) > self._size - LENGTH_BYTES:
            raise ValueError(
                f"message of {len(data)} bytes exceeds the ring slot of "
                f"{self._size - LENGTH_BYTES} bytes"
            )
        head = self._words[self._head]
        if head - self._words[self._tail] >= self._count:
            raise ChannelFull(f"all {self._count} ring slots are in use")
        fences.acquire()  # tail loaded before the slot it freed is written
        start = (head % self._count) * self._size
        end = start + LENGTH_BYTES + len(data)
        _LENGTH.pack_into(self._slots, start, len(data))
        self._slots[start + LENGTH_BYTES : end] = data
        fences.release()  # the slot, and whatever its message names, visible before head
        self._words[self._head] = head + 1

    def pop_ready(self) -> list[bytes]:
        """Every message posted and not yet consumed, oldest first ([] when none)."""
        count = self._words[self._head] - self._words[self._tail]
        return self.pop(count) if count else []

    def pop(self, count: int) -> list[bytes]:
        """The next ``count`` messages, oldest first (copied out: each slot is free once read).
        RuntimeError when the ring holds fewer or a slot's length is impossible."""
        tail = self._words[self._tail]
        if self._words[self._head] - tail < count:
            raise RuntimeError("channel corrupted: doorbell counted more messages than posted")
        fences.acquire()  # head loaded before the slots it published are read
        out: list[bytes] = []
        for _ in range(count):
            start = (tail % self._count) * self._size
            (length,) = _LENGTH.unpack_from(self._slots, start)
            if length > self._size - LENGTH_BYTES:
                raise RuntimeError(f"channel corrupted: slot length {length}")
            out.append(bytes(self._slots[start + LENGTH_BYTES : start + LENGTH_BYTES + length]))
            tail += 1
        fences.release()  # the slots read before tail hands them back to the producer
        self._words[self._tail] = tail
        return out
