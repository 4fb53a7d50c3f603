"""The output area's space, which both ends of a channel share: the worker allocates it, the
gateway gives it back.

The worker allocates outputs as a circular buffer (:class:`channel.shm.arena.OutputRing`); replies
arrive in completion order and each run reply's ``out_end`` closes its range ``[previous out_end,
out_end)``. The gateway may :meth:`OutputArea.hold` a range (while responses are encoded from it)
and release held ranges in any order (:meth:`OutputArea.release`): the header's released position
(``W_OUT_RELEASED``) advances over the contiguous prefix of released ranges only, so a held range
is never handed back to the worker early. A range never held is released by naming its end (or a
later one). A worker that finds no room waits on the release doorbell (:mod:`channel.shm.doorbell`;
word ``W_OUT_WAITING``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import time
from collections import deque
from typing import Final

from channel.shm import fences
from channel.shm.arena import OutputRing
from channel.shm.doorbell import fence, ring_if_sleeping
from channel.shm.segment import W_OUT_ALLOCATED, W_OUT_RELEASED, W_OUT_WAITING

log = logging.getLogger(__name__)

OUTPUT_WAIT_S: Final = 10.0
"""How long :meth:`OutputArea.alloc` waits for the gateway to release output space (s)."""


class OutputArenaExhausted(Exception):
    """The worker's output area cannot hold a batch's outputs (RESOURCE_EXHAUSTED)."""


class OutputArea:
    """The accounting of one channel's output area of ``capacity`` bytes, kept in the header
    ``words``; ``release_fd`` (not owned here) is its doorbell. Worker side: :meth:`alloc`,
    :attr:`allocated`. Gateway side: :meth:`hold`, :meth:`release`, :attr:`used`, :attr:`held`.
    Positions are monotonic byte counts."""

    def __init__(self, words: memoryview, capacity: int, release_fd: int, *, index: int) -> None:
        self.capacity = capacity
        self._words = words
        self._release_fd = release_fd
        self._index = index
        self._ring = OutputRing(capacity)
        self._ring.allocated = words[W_OUT_ALLOCATED]
        self._held: deque[tuple[int, int]] = deque()  # (start, end) held, in completion order
        self._returned: set[int] = set()  # ends of held ranges released out of order
        self._seen_end = words[W_OUT_RELEASED]  # newest end held or released
        self._release_poll = select.poll()
        self._release_poll.register(release_fd, select.POLLIN)

    # -- gateway side ---------------------------------------------------------------------------

    @property
    def used(self) -> int:
        """Bytes the worker has allocated and the gateway not yet released."""
        in_use = self._words[W_OUT_ALLOCATED] - self._words[W_OUT_RELEASED]
        return max(0, min(in_use, self.capacity))

    def hold(self, out_end: int) -> bool:
        """Keep the range a run reply closes (``[previous end, out_end)``) from the worker until
        ``release(out_end, held=True)``. Call in completion order. False (nothing held) when the
        range is empty."""
        if out_end <= self._seen_end:
            return False
        self._held.append((self._seen_end, out_end))
        self._seen_end = out_end
        return True

    def release(self, out_end: int, *, held: bool = False) -> None:
        """Hand space back to the worker. ``held``: the range :meth:`hold` kept for ``out_end``
        (in any order); else every range up to ``out_end`` that is not held. The worker gets the
        contiguous released prefix, woken if it waits for space."""
        ranges, returned = self._held, self._returned
        if not held:
            self._seen_end = max(self._seen_end, out_end)
        elif ranges and ranges[0][1] == out_end:
            ranges.popleft()  # the oldest range: the common, in-order case
        else:
            returned.add(out_end)
        while returned and ranges and ranges[0][1] in returned:
            returned.discard(ranges.popleft()[1])
        released = ranges[0][0] if ranges else self._seen_end
        if released <= self._words[W_OUT_RELEASED]:
            return
        fences.release()  # every read of the outputs handed back done before the worker may reuse
        self._words[W_OUT_RELEASED] = released
        ring_if_sleeping(self._words, W_OUT_WAITING, self._release_fd)

    @property
    def held(self) -> int:
        """Ranges held (by :meth:`hold`) and not yet released."""
        return len(self._held) - len(self._returned)

    # -- worker side ----------------------------------------------------------------------------

    def alloc(self, nbytes: int, *, timeout: float = OUTPUT_WAIT_S) -> int:
        """Offset of a contiguous 64-byte aligned block of ``nbytes``, sleeping on the release
        doorbell (at most ``timeout`` seconds) until the gateway releases earlier outputs.
        OutputArenaExhausted when ``nbytes`` exceeds the area or the wait times out."""
        if nbytes > self.capacity:
            raise OutputArenaExhausted(
                f"outputs of {nbytes} bytes exceed the worker's output arena of "
                f"{self.capacity} bytes"
            )
        offset = self._try_alloc(nbytes)
        if offset is not None:
            return offset
        deadline = time.monotonic() + timeout
        try:
            while True:
                self._words[W_OUT_WAITING] = 1
                fence()
                offset = self._try_alloc(nbytes)  # a release may have missed the flag
                if offset is not None:
                    return offset
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise OutputArenaExhausted(
                        f"no room for outputs of {nbytes} bytes in the worker's output arena of "
                        f"{self.capacity} bytes after {timeout:g} s: earlier outputs were "
                        "not released"
                    )
                log.debug("channel %d: waiting for %d bytes of output space", self._index, nbytes)
                self._release_poll.poll(math.ceil(remaining * 1000))
                with contextlib.suppress(BlockingIOError):
                    os.eventfd_read(self._release_fd)
        finally:
            self._words[W_OUT_WAITING] = 0

    def _try_alloc(self, nbytes: int) -> int | None:
        offset = self._ring.try_alloc(nbytes, self._words[W_OUT_RELEASED])
        if offset is not None:
            fences.acquire()  # the released position loaded before the space is written again
            self._words[W_OUT_ALLOCATED] = self._ring.allocated
        return offset

    @property
    def allocated(self) -> int:
        """Monotonic end of the newest block (a run reply's ``out_end``)."""
        return self._ring.allocated
