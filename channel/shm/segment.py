"""The memory of one channel: an anonymous, sealed ``memfd`` laid out, page aligned, as::

    [header][submit ring][complete ring][input area][output area]

The header is uint64 words: the layout (magic, version, ring slots, slot bytes, area sizes) and,
each on its own cache line because different processes write them, the rings' head/tail counters
and the output area's counters (see the ``W_*`` word indices). :class:`Segment` maps a memfd,
checks its header and names its parts; what the parts mean is :mod:`channel.shm.channel`'s.
The layout words are written once, before the memfd reaches the other process (a system call on
each side, which orders them); the counters are published with :mod:`channel.shm.fences`.
"""

from __future__ import annotations

import fcntl
import mmap
import os
from typing import Final

from channel.shm.ring import Ring

_MAGIC: Final = 0x31304D4853475400  # b"\0TGSHM01" little-endian
_VERSION: Final = 3
_PAGE: Final = mmap.PAGESIZE
_HEADER_BYTES: Final = 4096
_W_MAGIC, _W_VERSION, _W_SLOTS, _W_SLOT_BYTES, _W_INPUT, _W_OUTPUT = range(6)
_W_SUBMIT_HEAD: Final = 8
_W_SUBMIT_TAIL: Final = 16
_W_COMPLETE_HEAD: Final = 24
_W_COMPLETE_TAIL: Final = 32

W_OUT_RELEASED: Final = 40
"""Output bytes released so far (monotonic; written by the gateway)."""
W_OUT_ALLOCATED: Final = 48
"""Output bytes allocated so far (monotonic; written by the worker)."""
W_OUT_WAITING: Final = 56
"""1 while the worker waits for output space (written by the worker)."""
W_SUBMIT_SLEEPING: Final = 64
"""1 once the worker is going to sleep on ``submit_fd`` (set by the worker, cleared by the
gateway when it rings)."""
W_COMPLETE_SLEEPING: Final = 72
"""1 once the gateway has drained the complete ring and waits on ``complete_fd`` (set by the
gateway, at creation too; cleared by the worker when it rings)."""


def page_up(nbytes: int) -> int:
    """``nbytes`` rounded up to whole pages."""
    return -(-nbytes // _PAGE) * _PAGE


def create_memfd(
    name: str, input_bytes: int, output_bytes: int, ring_slots: int, slot_bytes: int
) -> int:
    """A new sealed memfd holding a zeroed channel with this layout; the caller owns the
    descriptor. The areas are rounded up to whole pages; ``slot_bytes`` (at least 64, a multiple
    of 8) includes the 4-byte length prefix. ValueError for a layout that cannot be."""
    if input_bytes < 1 or output_bytes < 1:
        raise ValueError(
            f"input_bytes and output_bytes must be >= 1, got {input_bytes}, {output_bytes}"
        )
    if ring_slots < 1:
        raise ValueError(f"ring_slots must be >= 1, got {ring_slots}")
    if slot_bytes < 64 or slot_bytes % 8:
        raise ValueError(f"slot_bytes must be a multiple of 8 and >= 64, got {slot_bytes}")
    input_bytes, output_bytes = page_up(input_bytes), page_up(output_bytes)
    ring_bytes = page_up(ring_slots * slot_bytes)
    total = _HEADER_BYTES + 2 * ring_bytes + input_bytes + output_bytes
    memfd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(memfd, total)
        seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, seals)
        with (
            mmap.mmap(memfd, _HEADER_BYTES, flags=mmap.MAP_SHARED) as header,
            memoryview(header) as raw,
            raw.cast("Q") as words,
        ):
            words[_W_SLOTS] = ring_slots
            words[_W_SLOT_BYTES] = slot_bytes
            words[_W_INPUT] = input_bytes
            words[_W_OUTPUT] = output_bytes
            words[W_COMPLETE_SLEEPING] = 1
            words[_W_VERSION] = _VERSION
            words[_W_MAGIC] = _MAGIC
    except BaseException:
        os.close(memfd)
        raise
    return memfd


class Segment:
    """A mapped channel memfd: ``words`` (the header), the two rings, ``input`` and ``output``
    (the data areas). ValueError if ``memfd`` does not hold a channel of this version."""

    def __init__(self, memfd: int) -> None:
        size = os.fstat(memfd).st_size
        if size < _HEADER_BYTES:
            raise ValueError("memfd does not hold a tensorgate channel of this version")
        self._mmap = mmap.mmap(memfd, size, flags=mmap.MAP_SHARED)
        buf = memoryview(self._mmap)
        words = buf[:_HEADER_BYTES].cast("Q")
        self._views = [words, buf]
        if words[_W_MAGIC] != _MAGIC or words[_W_VERSION] != _VERSION:
            self.close()
            raise ValueError("memfd does not hold a tensorgate channel of this version")
        self.ring_slots = words[_W_SLOTS]
        self.slot_bytes = words[_W_SLOT_BYTES]
        ring_bytes = page_up(self.ring_slots * self.slot_bytes)
        complete_at = _HEADER_BYTES + ring_bytes
        input_at = complete_at + ring_bytes
        output_at = input_at + words[_W_INPUT]
        end = output_at + words[_W_OUTPUT]
        if end > size:
            self.close()
            raise ValueError(f"channel layout exceeds its memfd of {size} bytes")
        self.words = words
        self.input = buf[input_at:output_at]
        self.output = buf[output_at:end]
        submit_slots = buf[_HEADER_BYTES:complete_at]
        complete_slots = buf[complete_at:input_at]
        self._views[1:1] = [self.input, self.output, submit_slots, complete_slots]
        count, slot = self.ring_slots, self.slot_bytes
        self.submit = Ring(words, _W_SUBMIT_HEAD, _W_SUBMIT_TAIL, submit_slots, count, slot)
        self.complete = Ring(words, _W_COMPLETE_HEAD, _W_COMPLETE_TAIL, complete_slots, count, slot)

    def close(self) -> bool:
        """Release the views and unmap; False if views exported elsewhere keep the mapping alive
        (it goes when they do). Idempotent."""
        for view in self._views:
            view.release()
        self._views.clear()
        try:
            self._mmap.close()
        except BufferError:
            return False
        return True
