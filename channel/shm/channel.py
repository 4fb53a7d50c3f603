"""The shared-memory channel between the gateway and one worker process.

One anonymous ``memfd`` (no name in /dev/shm, so nothing can leak: the kernel frees it with the
last process that maps it) holds the header, two rings and two data areas
(:mod:`channel.shm.segment`); three eventfds are its doorbells.

- Rings (:class:`channel.shm.ring.Ring`) are single-producer/single-consumer arrays of fixed
  slots holding encoded messages (:mod:`channel.messages`). The submit ring carries gateway →
  worker requests, the complete ring the replies; the channel moves their bytes only.
- ``submit_fd`` and ``complete_fd`` are need-wakeup doorbells (:mod:`channel.shm.doorbell`; words
  ``W_SUBMIT_SLEEPING``, ``W_COMPLETE_SLEEPING``). A wake-up drains every message the ring holds.
  Slot bytes are ordered before ``head`` by x86-64's total store order, as is the reuse of a slot
  once the consumer's tail has moved on (elsewhere keep fewer requests in flight than slots, as
  the gateway does).
- The input area is allocated only by the gateway (:class:`channel.shm.arena.Allocator`); the
  output area only by the worker, and handed back by the gateway in any order, with
  ``release_fd`` as its doorbell (:class:`channel.shm.output_area.OutputArea`). Output views are
  read-only on the gateway side.

One channel serves one worker process: when the worker exits, close the channel and give its
replacement a fresh one.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import time

from channel.shm.arena import Allocator
from channel.shm.doorbell import fence, ring_if_sleeping
from channel.shm.output_area import OUTPUT_WAIT_S, OutputArea
from channel.shm.segment import W_COMPLETE_SLEEPING, W_SUBMIT_SLEEPING, Segment, create_memfd

log = logging.getLogger(__name__)


class Channel:
    """Shared memory, rings and doorbells of one worker; see the module docstring.

    Gateway side: :meth:`create`, :meth:`submit`, :meth:`completions`, the input allocator,
    :meth:`release_outputs`. Worker side: the constructor (on inherited descriptors),
    :meth:`wait_submissions` (or :attr:`take_submissions` and :meth:`announce_sleep` for one wait
    over several channels), :meth:`post_completion`, :meth:`alloc_output`. Both: the views, the
    whole areas (:attr:`input_area`, :attr:`output_area`, :attr:`output_readonly`) and
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
        self.input_area = self._segment.input
        """The whole input area (writable), for the run paths, which read and write tensors by
        offset in it (:func:`channel.shm.payload.tensor_at`); released by :meth:`close`."""
        self.output_area = self._segment.output
        """The whole output area (writable: the worker writes outputs there)."""
        self.output_readonly = self._segment.output.toreadonly()
        """The whole output area, read-only: the gateway reads outputs through it (nothing may
        write into the worker's space)."""
        self.take_submissions = self._segment.submit.pop_ready
        """Worker side: every encoded request waiting, in order, without waiting ([] when none)."""
        self._inputs = Allocator(self.input_capacity)
        self._outputs = OutputArea(self._words, self.output_capacity, release_fd, index=index)
        self._poll = select.poll()
        self._poll.register(submit_fd, select.POLLIN)
        self._wake_fds: set[int] = set()

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

    def submit(self, message: bytes, *, ring: bool = True) -> None:
        """Post an encoded request to the worker, ringing its doorbell only if it sleeps (with
        ``ring`` False, not at all: call :meth:`ring_submit` after a burst of posts).
        ChannelFull when every slot is outstanding; ValueError when ``message`` does not fit."""
        self._segment.submit.push(message)
        if ring:
            ring_if_sleeping(self._words, W_SUBMIT_SLEEPING, self.submit_fd)

    def ring_submit(self) -> None:
        """Ring the worker's doorbell if it sleeps (after posts made with ``ring=False``)."""
        if not self._closed:
            ring_if_sleeping(self._words, W_SUBMIT_SLEEPING, self.submit_fd)

    def completions(self) -> list[bytes]:
        """Every encoded reply posted since the last call, in order; [] at once when there are
        none. Call it when :attr:`complete_fd` is readable (``loop.add_reader``): on return the
        gateway counts as asleep, so the worker rings for its next reply."""
        try:  # noqa: SIM105 (contextlib.suppress costs three Python calls per doorbell)
            os.eventfd_read(self.complete_fd)
        except BlockingIOError:
            pass
        replies = self._segment.complete.pop_ready()
        self._words[W_COMPLETE_SLEEPING] = 1
        fence()
        replies += self._segment.complete.pop_ready()  # posted while the word was clear
        return replies

    def alloc_input(self, nbytes: int) -> int | None:
        """Offset of a 64-byte aligned input block, or None when the input area is full."""
        return self._inputs.alloc(nbytes)

    def input_fits(self, nbytes: int) -> bool:
        """Whether :meth:`alloc_input` of ``nbytes`` would succeed now."""
        return self._inputs.fits(nbytes)

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
        return self._outputs.used

    def hold_outputs(self, out_end: int) -> bool:
        """Keep the range a run reply closes from the worker (:meth:`OutputArea.hold`); False
        when the range is empty."""
        return self._outputs.hold(out_end)

    def release_outputs(self, out_end: int, *, held: bool = False) -> None:
        """Hand output space back to the worker, waking it if it waits for some
        (:meth:`OutputArea.release`)."""
        self._outputs.release(out_end, held=held)

    @property
    def outputs_held(self) -> int:
        """Output ranges held (by :meth:`hold_outputs`) and not yet released."""
        return self._outputs.held

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
            fence()
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

    def announce_sleep(self, asleep: bool) -> None:
        """Worker side, for one wait over several channels (:mod:`workers.channel_set`): set (or
        clear) the word that tells the gateway to ring ``submit_fd``; the caller fences and
        re-checks every ring (:meth:`wait_submissions` with timeout 0) before it sleeps."""
        self._words[W_SUBMIT_SLEEPING] = int(asleep)

    def post_completion(self, message: bytes) -> None:
        """Post an encoded reply to the gateway, ringing its doorbell only if it sleeps
        (ChannelFull, ValueError as :meth:`submit`)."""
        self._segment.complete.push(message)
        ring_if_sleeping(self._words, W_COMPLETE_SLEEPING, self.complete_fd)

    def alloc_output(self, nbytes: int, *, timeout: float = OUTPUT_WAIT_S) -> int:
        """Offset of a contiguous 64-byte aligned output block of ``nbytes``, waiting at most
        ``timeout`` seconds for the gateway to release earlier outputs; OutputArenaExhausted when
        ``nbytes`` exceeds the area or the wait times out (:meth:`OutputArea.alloc`)."""
        return self._outputs.alloc(nbytes, timeout=timeout)

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
        self.output_readonly.release()
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
