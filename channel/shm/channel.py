"""The shared-memory channel between the gateway and one worker process.

One anonymous ``memfd`` (no name in /dev/shm, so nothing can leak: the kernel frees it with the
last process that maps it) holds the header, two rings and two data areas
(:mod:`channel.shm.segment`); three eventfds are its doorbells.

- Rings (:class:`channel.shm.ring.Ring`) are single-producer/single-consumer arrays of fixed
  slots holding encoded messages (:mod:`channel.messages`). The submit ring carries gateway →
  worker requests, the complete ring the replies; the channel moves their bytes only.
- ``submit_fd`` and ``complete_fd`` are need-wakeup doorbells (as io_uring's): a consumer that
  finds its ring empty sets its "sleeping" word (``W_SUBMIT_SLEEPING``, ``W_COMPLETE_SLEEPING``),
  fences, re-checks the ring, and only then sleeps on the eventfd; a producer pushes, fences, and
  rings only when that word is set, clearing it as it rings. Either the producer sees the word or
  the consumer sees the message, so no wake-up is lost, and a consumer that is awake or already
  rung costs its producer no syscall. A wake-up drains every message the ring holds. Slot bytes
  are ordered before ``head`` by x86-64's total store order, as is the reuse of a slot once the
  consumer's tail has moved on (elsewhere keep fewer requests in flight than slots, as the gateway
  does).
- The input area is allocated only by the gateway (:class:`channel.shm.arena.Allocator`); the output
  area only by the worker, as a circular buffer (:class:`channel.shm.arena.OutputRing`). Replies
  arrive in completion order; each run reply's ``out_end`` closes its range ``[previous out_end,
  out_end)``. The gateway may :meth:`Channel.hold_outputs` a range (while responses are encoded
  from it) and release held ranges in any order (:meth:`Channel.release_outputs`): the header's
  released position advances over the contiguous prefix of released ranges only, so a held
  range is never handed back to the worker early. A range never held is released by naming its
  end (or a later one). A worker that finds no room sets a "waiting" word, re-checks, then sleeps on
  ``release_fd``; the gateway rings that doorbell only while the word is set, so releasing costs
  no syscall while the worker has room. Output views are read-only on the gateway side.

One channel serves one worker process: when the worker exits, close the channel and give its
replacement a fresh one.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import threading
import time
from collections import deque
from typing import Final

from channel.shm.arena import Allocator, OutputRing
from channel.shm.ring import ChannelFull
from channel.shm.segment import (
    W_COMPLETE_SLEEPING,
    W_OUT_ALLOCATED,
    W_OUT_RELEASED,
    W_OUT_WAITING,
    W_SUBMIT_SLEEPING,
    Segment,
    create_memfd,
)

__all__ = ["Channel", "ChannelFull", "OutputArenaExhausted"]

log = logging.getLogger(__name__)

OUTPUT_WAIT_S: Final = 10.0
"""How long :meth:`Channel.alloc_output` waits for the gateway to release output space (s)."""

_FENCE: Final = threading.Lock()


def _fence() -> None:
    """A full memory barrier: taking a lock is an atomic read-modify-write (x86-64: ``lock
    cmpxchg``), which keeps this thread's earlier stores from passing its later loads. Both
    sides of the waiting-flag handshake need it, or each could miss the other's store."""
    with _FENCE:
        pass


class OutputArenaExhausted(Exception):
    """The worker's output area cannot hold a batch's outputs (RESOURCE_EXHAUSTED)."""


class Channel:
    """Shared memory, rings and doorbells of one worker; see the module docstring.

    Gateway side: :meth:`create`, :meth:`submit`, :meth:`completions`, the input allocator,
    :meth:`release_outputs`. Worker side: the constructor (on inherited descriptors),
    :meth:`wait_submissions`, :meth:`post_completion`, :meth:`alloc_output`. Both: the views and
    :meth:`close`. A channel is used by one thread per process.
    """

    def __init__(
        self, *, index: int, memfd: int, submit_fd: int, complete_fd: int, release_fd: int
    ) -> None:
        """Map the channel in ``memfd`` (layout from its header; ValueError if it holds none) and
        own the four descriptors from here on. The gateway calls :meth:`create`; the worker calls
        this on the descriptors it inherited (:attr:`fds`)."""
        self.index = index
        self.memfd = memfd
        self.submit_fd = submit_fd
        self.complete_fd = complete_fd
        self.release_fd = release_fd
        self._closed = False
        self._segment = Segment(memfd)
        self._words = self._segment.words
        self.ring_slots = self._segment.ring_slots
        self.slot_bytes = self._segment.slot_bytes
        self.input_capacity = len(self._segment.input)
        self.output_capacity = len(self._segment.output)
        self._inputs = Allocator(self.input_capacity)
        self._outputs = OutputRing(self.output_capacity)
        self._outputs.allocated = self._words[W_OUT_ALLOCATED]
        self._held: deque[tuple[int, int]] = deque()  # (start, end) held, in completion order
        self._returned: set[int] = set()  # ends of held ranges released out of order
        self._seen_end = self._words[W_OUT_RELEASED]  # newest end held or released
        self._poll = select.poll()
        self._poll.register(submit_fd, select.POLLIN)
        self._wake_fds: set[int] = set()
        self._release_poll = select.poll()
        self._release_poll.register(release_fd, select.POLLIN)

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        *,
        index: int,
        input_bytes: int,
        output_bytes: int,
        ring_slots: int = 64,
        slot_bytes: int = 16384,
    ) -> Channel:
        """A fresh channel (gateway side); ValueError for a bad layout (see
        :func:`channel.shm.segment.create_memfd`)."""
        if index < 0:
            raise ValueError(f"index must be >= 0, got {index}")
        fds: list[int] = []
        try:
            name = f"tensorgate-w{index}"
            fds.append(create_memfd(name, input_bytes, output_bytes, ring_slots, slot_bytes))
            for _ in range(3):
                fds.append(os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK))
            memfd, submit_fd, complete_fd, release_fd = fds
            return cls(
                index=index,
                memfd=memfd,
                submit_fd=submit_fd,
                complete_fd=complete_fd,
                release_fd=release_fd,
            )
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise

    @property
    def fds(self) -> tuple[int, int, int, int]:
        """``(memfd, submit_fd, complete_fd, release_fd)``: what a worker inherits
        (``subprocess.Popen(pass_fds=...)``) and passes to the constructor."""
        return (self.memfd, self.submit_fd, self.complete_fd, self.release_fd)

    # -- gateway side ---------------------------------------------------------------------------

    def submit(self, message: bytes) -> None:
        """Post an encoded request to the worker, ringing its doorbell only if it sleeps.
        ChannelFull when every slot is outstanding; ValueError when ``message`` does not fit."""
        self._segment.submit.push(message)
        self._ring_if_sleeping(W_SUBMIT_SLEEPING, self.submit_fd)

    def completions(self) -> list[bytes]:
        """Every encoded reply posted since the last call, in order; [] at once when there are
        none. Call it when :attr:`complete_fd` is readable (``loop.add_reader``): on return the
        gateway counts as asleep, so the worker rings for its next reply."""
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self.complete_fd)
        replies = self._segment.complete.pop_ready()
        self._words[W_COMPLETE_SLEEPING] = 1
        _fence()
        replies += self._segment.complete.pop_ready()  # posted while the word was clear
        return replies

    def _ring_if_sleeping(self, word: int, fd: int) -> None:
        """The producer's half of the need-wakeup handshake, after a push (or a release of
        output space): ring ``fd`` once if the consumer set ``word``, clearing it."""
        _fence()
        if self._words[word]:
            self._words[word] = 0
            os.eventfd_write(fd, 1)

    def alloc_input(self, nbytes: int) -> int | None:
        """Offset of a 64-byte aligned input block, or None when the input area is full."""
        return self._inputs.alloc(nbytes)

    def free_input(self, offset: int) -> None:
        """Free an input block once the worker has replied to the batch that used it."""
        self._inputs.free(offset)

    @property
    def input_used(self) -> int:
        """Bytes of the input area allocated now."""
        return self._inputs.used

    @property
    def output_used(self) -> int:
        """Bytes of the output area the worker has written and the gateway not yet released."""
        in_use = self._words[W_OUT_ALLOCATED] - self._words[W_OUT_RELEASED]
        return max(0, min(in_use, self.output_capacity))

    def hold_outputs(self, out_end: int) -> bool:
        """Keep the range a run reply closes (``[previous end, out_end)``) from the worker until
        ``release_outputs(out_end, held=True)``. Call in completion order. False (nothing held)
        when the range is empty."""
        if out_end <= self._seen_end:
            return False
        self._held.append((self._seen_end, out_end))
        self._seen_end = out_end
        return True

    def release_outputs(self, out_end: int, *, held: bool = False) -> None:
        """Hand output space back to the worker. ``held``: the range :meth:`hold_outputs` kept
        for ``out_end`` (in any order); else every range up to ``out_end`` that is not held.
        The worker gets the contiguous released prefix, woken if it waits for space."""
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
        self._words[W_OUT_RELEASED] = released
        self._ring_if_sleeping(W_OUT_WAITING, self.release_fd)

    @property
    def outputs_held(self) -> int:
        """Output ranges held (by :meth:`hold_outputs`) and not yet released."""
        return len(self._held) - len(self._returned)

    @property
    def worker_sleeps(self) -> bool:
        """Whether the worker has announced that it sleeps on ``submit_fd`` (the next
        :meth:`submit` rings)."""
        return bool(self._words[W_SUBMIT_SLEEPING])

    # -- worker side ----------------------------------------------------------------------------

    def wait_submissions(self, timeout: float | None, *, wake_fd: int | None = None) -> list[bytes]:
        """Every encoded request waiting, in order, sleeping on ``submit_fd`` (after announcing it
        in the header) until one arrives or ``timeout`` seconds pass ([]); None waits forever. A
        readable ``wake_fd`` (e.g. a ``signal.set_wakeup_fd`` pipe) is drained and also ends the
        wait with [], so signal flags can be checked promptly."""
        ring = self._segment.submit
        requests = ring.pop_ready()
        if requests or timeout == 0:
            return requests
        if wake_fd is not None and wake_fd not in self._wake_fds:
            self._poll.register(wake_fd, select.POLLIN)
            self._wake_fds.add(wake_fd)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._words[W_SUBMIT_SLEEPING] = 1
            _fence()
            requests = ring.pop_ready()  # pushed before the gateway could see the word
            if requests:
                self._words[W_SUBMIT_SLEEPING] = 0
                return requests
            ms = -1 if deadline is None else math.ceil(max(0.0, deadline - time.monotonic()) * 1e3)
            woken = False
            events = self._poll.poll(ms)
            self._words[W_SUBMIT_SLEEPING] = 0
            for fd, _ in events:
                with contextlib.suppress(BlockingIOError):
                    if fd == self.submit_fd:
                        os.eventfd_read(fd)
                    else:
                        os.read(fd, 4096)
                        woken = True
            requests = ring.pop_ready()
            if requests or woken or (deadline is not None and time.monotonic() >= deadline):
                return requests

    def post_completion(self, message: bytes) -> None:
        """Post an encoded reply to the gateway, ringing its doorbell only if it sleeps
        (ChannelFull, ValueError as :meth:`submit`)."""
        self._segment.complete.push(message)
        self._ring_if_sleeping(W_COMPLETE_SLEEPING, self.complete_fd)

    def alloc_output(self, nbytes: int, *, timeout: float = OUTPUT_WAIT_S) -> int:
        """Offset of a contiguous 64-byte aligned output block of ``nbytes``, sleeping on
        ``release_fd`` (at most ``timeout`` seconds) until the gateway releases earlier outputs.
        OutputArenaExhausted when ``nbytes`` exceeds the area or the wait times out."""
        if nbytes > self.output_capacity:
            raise OutputArenaExhausted(
                f"outputs of {nbytes} bytes exceed the worker's output arena of "
                f"{self.output_capacity} bytes"
            )
        offset = self._try_alloc_output(nbytes)
        if offset is not None:
            return offset
        deadline = time.monotonic() + timeout
        try:
            while True:
                self._words[W_OUT_WAITING] = 1
                _fence()
                offset = self._try_alloc_output(nbytes)  # a release may have missed the flag
                if offset is not None:
                    return offset
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise OutputArenaExhausted(
                        f"no room for outputs of {nbytes} bytes in the worker's output arena of "
                        f"{self.output_capacity} bytes after {timeout:g} s: earlier outputs were "
                        "not released"
                    )
                log.debug("channel %d: waiting for %d bytes of output space", self.index, nbytes)
                self._release_poll.poll(math.ceil(remaining * 1000))
                with contextlib.suppress(BlockingIOError):
                    os.eventfd_read(self.release_fd)
        finally:
            self._words[W_OUT_WAITING] = 0

    def _try_alloc_output(self, nbytes: int) -> int | None:
        offset = self._outputs.try_alloc(nbytes, self._words[W_OUT_RELEASED])
        if offset is not None:
            self._words[W_OUT_ALLOCATED] = self._outputs.allocated
        return offset

    @property
    def output_allocated(self) -> int:
        """Monotonic end of the newest output block (a run reply's ``out_end``)."""
        return self._outputs.allocated

    # -- both sides -----------------------------------------------------------------------------

    def input_view(self, offset: int, nbytes: int) -> memoryview:
        """Writable view of ``nbytes`` of the input area at ``offset``; ValueError if outside."""
        return self._slice(self._segment.input, offset, nbytes)

    def output_view(self, offset: int, nbytes: int) -> memoryview:
        """Writable view of ``nbytes`` of the output area at ``offset`` (the worker writes
        outputs there); ValueError if outside."""
        return self._slice(self._segment.output, offset, nbytes)

    def output_reader(self, offset: int, nbytes: int) -> memoryview:
        """Read-only view of ``nbytes`` of the output area at ``offset`` (the gateway reads
        outputs through it: nothing may write into the worker's space); ValueError if outside."""
        return self._slice(self._segment.output, offset, nbytes).toreadonly()

    def _slice(self, area: memoryview, offset: int, nbytes: int) -> memoryview:
        if self._closed:
            raise ValueError("channel is closed")
        if offset < 0 or nbytes < 0 or offset + nbytes > len(area):
            raise ValueError(
                f"block [{offset}, {offset + nbytes}) lies outside an area of {len(area)} bytes"
            )
        return area[offset : offset + nbytes]

    def close(self) -> None:
        """Unmap and close every descriptor; idempotent. Views still held elsewhere keep the
        mapping alive until they are dropped."""
        if self._closed:
            return
        self._closed = True
        if not self._segment.close():
            log.debug("channel %d: views still exported; unmapped when they go", self.index)
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
