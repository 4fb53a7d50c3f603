"""A single-producer / single-consumer ring of fixed-size slots holding JSON descriptors.

The ring's slots live in shared memory; its monotonic ``head`` (written only by the producer) and
``tail`` (written only by the consumer) are uint64 words of the channel header. Each slot holds a
little-endian uint32 length and the descriptor's JSON bytes. Ordering between processes comes from
the doorbell syscalls around it (see :mod:`workers.shm.channel`).
"""

from __future__ import annotations

import json
import struct
from typing import Any, Final

LENGTH_BYTES: Final = 4
_LENGTH: Final = struct.Struct("<I")
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_DECODER: Final = json.JSONDecoder()


class ChannelFull(Exception):
    """A ring has no free slot (the producer has more descriptors outstanding than slots)."""


class Ring:
    """One SPSC ring: the producer owns ``head``, the consumer owns ``tail``."""

    def __init__(
        self, words: memoryview, head: int, tail: int, slots: memoryview, count: int, size: int
    ) -> None:
        self._words = words
        self._head = head
        self._tail = tail
        self._slots = slots
        self._count = count
        self._size = size

    def push(self, desc: dict[str, Any]) -> None:
        data = _ENCODER.encode(desc).encode()
        if len(data) > self._size - LENGTH_BYTES:
            raise ValueError(
                f"descriptor of {len(data)} bytes exceeds the ring slot of "
                f"{self._size - LENGTH_BYTES} bytes"
            )
        head = self._words[self._head]
        if head - self._words[self._tail] >= self._count:
            raise ChannelFull(f"all {self._count} ring slots are in use")
        start = (head % self._count) * self._size
        end = start + LENGTH_BYTES + len(data)
        _LENGTH.pack_into(self._slots, start, len(data))
        self._slots[start + LENGTH_BYTES : end] = data
        self._words[self._head] = head + 1

    def pop(self, count: int) -> list[dict[str, Any]]:
        tail = self._words[self._tail]
        if self._words[self._head] - tail < count:
            raise RuntimeError("channel corrupted: doorbell counted more descriptors than posted")
        out: list[dict[str, Any]] = []
        for _ in range(count):
            start = (tail % self._count) * self._size
            (length,) = _LENGTH.unpack_from(self._slots, start)
            if length > self._size - LENGTH_BYTES:
                raise RuntimeError(f"channel corrupted: slot length {length}")
            body = str(self._slots[start + LENGTH_BYTES : start + LENGTH_BYTES + length], "utf-8")
            tail += 1
            self._words[self._tail] = tail
            desc = _DECODER.decode(body)
            if not isinstance(desc, dict):
                raise RuntimeError("channel corrupted: descriptor is not a JSON object")
            out.append(desc)
        return out
