"""Byte allocators for the two shared-memory data areas of a channel (pure Python, no I/O).

- :class:`Allocator` — the input area, allocated and freed only by the gateway: first-fit over an
  address-ordered free list, 64-byte aligned blocks, neighbours coalesced on free.
- :class:`OutputRing` — the output area, allocated only by the worker as a circular buffer and
  released in order by the gateway. Positions are monotonic byte counts; a block's offset in the
  area is ``position % capacity`` and a block never wraps (the tail end is skipped instead).
"""

from __future__ import annotations

import bisect

ALIGNMENT = 64
"""Every block starts on a multiple of this many bytes (a cache line; enough for any dtype)."""


def align_up(nbytes: int, alignment: int = ALIGNMENT) -> int:
    """``nbytes`` rounded up to a multiple of ``alignment``."""
    return -(-nbytes // alignment) * alignment


class Allocator:
    """First-fit allocator over ``size`` bytes (rounded down to :data:`ALIGNMENT`).

    Every block is at least :data:`ALIGNMENT` bytes, so even a zero-byte allocation gets a unique
    offset to free. Cost is linear in the number of free fragments, which coalescing keeps small.
    """

    def __init__(self, size: int) -> None:
        if size < ALIGNMENT:
            raise ValueError(f"allocator size must be >= {ALIGNMENT} bytes, got {size}")
        self._capacity = size - size % ALIGNMENT
        self._starts: list[int] = [0]  # free blocks, ordered by start
        self._sizes: list[int] = [self._capacity]
        self._taken: dict[int, int] = {}  # offset -> block size
        self._used = 0

    @property
    def capacity(self) -> int:
        """Bytes this allocator manages."""
        return self._capacity

    @property
    def used(self) -> int:
        """Bytes currently allocated, counting alignment padding."""
        return self._used

    def alloc(self, nbytes: int) -> int | None:
        """Offset of a fresh 64-byte aligned block of ``nbytes``; None when no free block fits."""
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        size = max(-(-nbytes // ALIGNMENT) * ALIGNMENT, ALIGNMENT)  # align_up, inline
        for i, free in enumerate(self._sizes):
            if free >= size:
                offset = self._starts[i]
                if free == size:
                    del self._starts[i]
                    del self._sizes[i]
                else:
                    self._starts[i] = offset + size
                    self._sizes[i] = free - size
                self._taken[offset] = size
                self._used += size
                return offset
        return None

    def fits(self, nbytes: int) -> bool:
        """Whether :meth:`alloc` of ``nbytes`` would succeed now."""
        size = max(-(-nbytes // ALIGNMENT) * ALIGNMENT, ALIGNMENT)  # align_up, inline
        return max(self._sizes, default=0) >= size

    def free(self, offset: int) -> None:
        """Return the block at ``offset``; ValueError if it is not allocated (double free)."""
        size = self._taken.pop(offset, None)
        if size is None:
            raise ValueError(f"offset {offset} is not an allocated block")
        self._used -= size
        i = bisect.bisect_left(self._starts, offset)
        merge_prev = i > 0 and self._starts[i - 1] + self._sizes[i - 1] == offset
        merge_next = i < len(self._starts) and offset + size == self._starts[i]
        if merge_prev and merge_next:
            self._sizes[i - 1] += size + self._sizes[i]
            del self._starts[i]
            del self._sizes[i]
        elif merge_prev:
            self._sizes[i - 1] += size
        elif merge_next:
            self._starts[i] = offset
            self._sizes[i] += size
        else:
            self._starts.insert(i, offset)
            self._sizes.insert(i, size)

    def free_blocks(self) -> list[tuple[int, int]]:
        """The free list as ``(offset, nbytes)`` pairs in address order (for tests and metrics)."""
        return list(zip(self._starts, self._sizes, strict=True))


EARLY_WRAP_ROOM = 64 * 1024
"""Free bytes before the oldest block in use that let a block go back to the start of the output
area early (a quarter of the area, when smaller): the pages in use stay within about this much."""


class OutputRing:
    """Circular-buffer accounting of the output area (the worker's side).

    ``allocated`` is the monotonic end of the newest block; the gateway publishes ``released``, the
    monotonic end of the newest block it has finished with (blocks are released in order). Bytes in
    ``[released, allocated)`` are in use. A block goes at the start of the area when nothing is in
    use, or when it fits there with :data:`EARLY_WRAP_ROOM` (a quarter of the area, when smaller)
    free before the oldest block in use; else after the newest one; a block that would cross the
    end of the area starts at the next wrap. A skipped tail counts as used until released.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < ALIGNMENT or capacity % ALIGNMENT:
            raise ValueError(f"output capacity must be a multiple of {ALIGNMENT}, got {capacity}")
        self.capacity = capacity
        self.allocated = 0

    def try_alloc(self, nbytes: int, released: int) -> int | None:
        """Area offset of a contiguous block of ``nbytes`` (64-byte aligned), or None until more of
        the area is released. ValueError if ``nbytes`` exceeds the capacity or ``released`` is not
        a position this ring handed out."""
        if nbytes > self.capacity or nbytes < 0:
            raise ValueError(f"block of {nbytes} bytes does not fit an area of {self.capacity}")
        if released > self.allocated:
            raise ValueError(f"released {released} is beyond allocated {self.allocated}")
        size = -(-nbytes // ALIGNMENT) * ALIGNMENT  # align_up, inline: once per run
        start = self.allocated
        pos = start % self.capacity
        oldest = released % self.capacity
        empty = released == self.allocated
        # Back to the start early only with room there for many blocks: after a wrap, only what
        # fits before the oldest byte in use may follow, and the skipped tail counts as used.
        room = min(EARLY_WRAP_ROOM, self.capacity // 4)
        fits_at_start = oldest >= room and size <= oldest and (empty or oldest < pos)
        if pos + size > self.capacity or (pos and fits_at_start):
            # Wrap now: past the end, or back to the start of the area when the block fits
            # there, so that the pages in use (resident in both processes) stay the same few.
            start += self.capacity - pos
        # Free when nothing is in use, or when the block ends before the oldest byte in use comes
        # round again.
        if released != self.allocated and start + size > released + self.capacity:
            return None
        self.allocated = start + size
        return start % self.capacity
