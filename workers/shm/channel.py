"""The shared-memory channel between the gateway and one worker process.

One anonymous ``memfd`` (no name in /dev/shm, so nothing can leak: the kernel frees it with the
last process that maps it) holds, page aligned::

    [header][submit ring][complete ring][input area][output area]

- The header is uint64 words: the layout (checked by :meth:`Channel.attach`) and, each on its own
  cache line, the rings' monotonic head/tail counters and the output area's ``allocated`` (written
  by the worker) and ``released`` (written by the gateway) byte positions.
- Rings are single-producer/single-consumer arrays of fixed slots, each a little-endian uint32
  length and a JSON descriptor (see :mod:`workers.messages`). The submit ring carries gateway →
  worker requests, the complete ring the replies.
- Doorbells are two eventfds, rung once per descriptor after it is fully written. A consumer takes
  exactly as many descriptors as the doorbell counted, so it never reads a slot whose doorbell it
  has not seen: the two syscalls order the slot's bytes on every CPU architecture. A slot is
  reused once the consumer's tail, stored after reading it, has moved on (ordered by x86-64's
  total store order; elsewhere keep fewer requests in flight than slots, as the gateway does).
- The input area is allocated only by the gateway (:class:`workers.shm.arena.Allocator`); the output
  area only by the worker, as a circular buffer (:class:`workers.shm.arena.OutputRing`) that the
  gateway releases in completion order (:meth:`Channel.release_outputs`).

One channel serves one worker process: when the worker exits, close the channel and give its
replacement a fresh one.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import logging
import math
import mmap
import os
import select
import time
from collections.abc import Sequence
from typing import Any, Final

from workers.shm.arena import Allocator, OutputRing
from workers.shm.ring import ChannelFull, Ring

__all__ = ["Channel", "ChannelFull", "OutputArenaExhausted"]

log = logging.getLogger(__name__)

_MAGIC: Final = 0x31304D4853475400  # b"\0TGSHM01" little-endian
_VERSION: Final = 1
_PAGE: Final = mmap.PAGESIZE
_HEADER_BYTES: Final = 4096

# Header word indices (uint64). Counters written by different processes sit on separate lines.
_W_MAGIC, _W_VERSION, _W_SLOTS, _W_SLOT_BYTES, _W_INPUT, _W_OUTPUT = range(6)
_W_SUBMIT_HEAD: Final = 8
_W_SUBMIT_TAIL: Final = 16
_W_COMPLETE_HEAD: Final = 24
_W_COMPLETE_TAIL: Final = 32
_W_OUT_RELEASED: Final = 40
_W_OUT_ALLOCATED: Final = 48

_OUTPUT_WAIT_S: Final = 10.0


class OutputArenaExhausted(Exception):
    """The worker's output area cannot hold a batch's outputs (RESOURCE_EXHAUSTED)."""


def _page_up(nbytes: int) -> int:
    return -(-nbytes // _PAGE) * _PAGE


class Channel:
    """Shared memory, rings and doorbells of one worker; see the module docstring.

    Gateway side: :meth:`create`, :meth:`submit`, :meth:`completions`, the input allocator,
    :meth:`release_outputs`. Worker side: :meth:`attach`, :meth:`wait_submissions`,
    :meth:`post_completion`, :meth:`alloc_output`. Both: the views and :meth:`close`. A channel
    is used by one thread per process.
    """

    def __init__(
        self,
        *,
        index: int,
        memfd: int,
        submit_fd: int,
        complete_fd: int,
    ) -> None:
        """Map ``memfd`` (layout from its header); use :meth:`create` or :meth:`attach`."""
        self.index = index
        self.memfd = memfd
        self.submit_fd = submit_fd
        self.complete_fd = complete_fd
        self._closed = False
        size = os.fstat(memfd).st_size
        if size < _HEADER_BYTES:
            raise ValueError("memfd does not hold a tensorgate channel of this version")
        self._mmap = mmap.mmap(memfd, size, flags=mmap.MAP_SHARED)
        buf = memoryview(self._mmap)
        words = buf[:_HEADER_BYTES].cast("Q")
        if words[_W_MAGIC] != _MAGIC or words[_W_VERSION] != _VERSION:
            words.release()
            buf.release()
            self._mmap.close()
            raise ValueError("memfd does not hold a tensorgate channel of this version")
        self.ring_slots = words[_W_SLOTS]
        self.slot_bytes = words[_W_SLOT_BYTES]
        self.input_capacity = words[_W_INPUT]
        self.output_capacity = words[_W_OUTPUT]
        ring_bytes = _page_up(self.ring_slots * self.slot_bytes)
        submit_at = _HEADER_BYTES
        complete_at = submit_at + ring_bytes
        input_at = complete_at + ring_bytes
        output_at = input_at + self.input_capacity
        if output_at + self.output_capacity > size:
            words.release()
            buf.release()
            self._mmap.close()
            raise ValueError(f"channel layout exceeds its memfd of {size} bytes")
        self._words = words
        self._input = buf[input_at:output_at]
        self._output = buf[output_at : output_at + self.output_capacity]
        submit_slots = buf[submit_at:complete_at]
        complete_slots = buf[complete_at:input_at]
        self._submit = Ring(
            words, _W_SUBMIT_HEAD, _W_SUBMIT_TAIL, submit_slots, self.ring_slots, self.slot_bytes
        )
        self._complete = Ring(
            words,
            _W_COMPLETE_HEAD,
            _W_COMPLETE_TAIL,
            complete_slots,
            self.ring_slots,
            self.slot_bytes,
        )
        self._views = [words, self._input, self._output, submit_slots, complete_slots, buf]
        self._inputs = Allocator(self.input_capacity)
        self._outputs = OutputRing(self.output_capacity)
        self._outputs.allocated = words[_W_OUT_ALLOCATED]
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
        """A fresh channel (gateway side). Areas are rounded up to whole pages; ``slot_bytes``
        (at least 64, a multiple of 8) includes the 4-byte length prefix."""
        if index < 0:
            raise ValueError(f"index must be >= 0, got {index}")
        if input_bytes < 1 or output_bytes < 1:
            raise ValueError(
                f"input_bytes and output_bytes must be >= 1, got {input_bytes}, {output_bytes}"
            )
        if ring_slots < 1:
            raise ValueError(f"ring_slots must be >= 1, got {ring_slots}")
        if slot_bytes < 64 or slot_bytes % 8:
            raise ValueError(f"slot_bytes must be a multiple of 8 and >= 64, got {slot_bytes}")
        input_bytes, output_bytes = _page_up(input_bytes), _page_up(output_bytes)
        ring_bytes = _page_up(ring_slots * slot_bytes)
        total = _HEADER_BYTES + 2 * ring_bytes + input_bytes + output_bytes
        fds: list[int] = []
        try:
            memfd = os.memfd_create(f"tensorgate-w{index}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            fds.append(memfd)
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
                words[_W_VERSION] = _VERSION
                words[_W_MAGIC] = _MAGIC
            submit_fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            fds.append(submit_fd)
            complete_fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            fds.append(complete_fd)
            return cls(
                index=index,
                memfd=memfd,
                submit_fd=submit_fd,
                complete_fd=complete_fd,
            )
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise

    def child_argv(self) -> list[str]:
        """Arguments for ``python -m workers`` to attach to this channel (names this process as
        the worker's parent)."""
        return [
            "--index",
            str(self.index),
            "--memfd",
            str(self.memfd),
            "--submit-fd",
            str(self.submit_fd),
            "--complete-fd",
            str(self.complete_fd),
            "--parent-pid",
            str(os.getpid()),
        ]

    def child_fds(self) -> tuple[int, ...]:
        """File descriptors the worker inherits (``subprocess.Popen(pass_fds=...)``)."""
        return (self.memfd, self.submit_fd, self.complete_fd)

    @classmethod
    def attach(cls, argv: Sequence[str]) -> Channel:
        """The worker's end of a channel, from :meth:`child_argv` (other arguments are ignored).
        The channel owns the inherited descriptors from here on."""
        parser = argparse.ArgumentParser(add_help=False)
        parser.add_argument("--index", type=int, required=True)
        parser.add_argument("--memfd", type=int, required=True)
        parser.add_argument("--submit-fd", type=int, required=True)
        parser.add_argument("--complete-fd", type=int, required=True)
        args, _ = parser.parse_known_args(list(argv))
        return cls(
            index=args.index,
            memfd=args.memfd,
            submit_fd=args.submit_fd,
            complete_fd=args.complete_fd,
        )

    # -- gateway side ---------------------------------------------------------------------------

    def submit(self, desc: dict[str, Any]) -> None:
        """Post a request to the worker and ring its doorbell. ChannelFull when every slot is
        outstanding; ValueError when ``desc`` does not fit a slot."""
        self._submit.push(desc)
        os.eventfd_write(self.submit_fd, 1)

    def completions(self) -> list[dict[str, Any]]:
        """Replies posted since the last call, in order; [] at once when there are none.
        Call it when :attr:`complete_fd` is readable (``loop.add_reader``)."""
        try:
            count = os.eventfd_read(self.complete_fd)
        except BlockingIOError:
            return []
        return self._complete.pop(count)

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
        in_use = self._words[_W_OUT_ALLOCATED] - self._words[_W_OUT_RELEASED]
        return max(0, min(in_use, self.output_capacity))

    def release_outputs(self, completion: dict[str, Any]) -> None:
        """Hand the output space of ``completion`` (and of every earlier one) back to the worker,
        after its outputs have been copied out. Completions without ``out_end`` are ignored."""
        out_end = completion.get("out_end")
        if isinstance(out_end, int) and out_end > self._words[_W_OUT_RELEASED]:
            self._words[_W_OUT_RELEASED] = out_end

    # -- worker side ----------------------------------------------------------------------------

    def wait_submissions(
        self, timeout: float | None, *, wake_fd: int | None = None
    ) -> list[dict[str, Any]]:
        """Block until requests arrive (in order) or ``timeout`` seconds pass ([]); None waits
        forever. A readable ``wake_fd`` (e.g. a ``signal.set_wakeup_fd`` pipe) is drained and
        also ends the wait, so signal flags can be checked promptly."""
        if wake_fd is not None and wake_fd not in self._wake_fds:
            self._poll.register(wake_fd, select.POLLIN)
            self._wake_fds.add(wake_fd)
        ms = -1 if timeout is None else max(0, math.ceil(timeout * 1000))
        ready = False
        for fd, _ in self._poll.poll(ms):
            if fd == self.submit_fd:
                ready = True
            else:
                with contextlib.suppress(BlockingIOError):
                    os.read(fd, 4096)
        if not ready:
            return []
        try:
            count = os.eventfd_read(self.submit_fd)
        except BlockingIOError:
            return []
        return self._submit.pop(count)

    def post_completion(self, desc: dict[str, Any]) -> None:
        """Post a reply to the gateway and ring its doorbell (ChannelFull, ValueError as
        :meth:`submit`)."""
        self._complete.push(desc)
        os.eventfd_write(self.complete_fd, 1)

    def alloc_output(self, nbytes: int, *, timeout: float = _OUTPUT_WAIT_S) -> int:
        """Offset of a contiguous 64-byte aligned output block of ``nbytes``, waiting (short
        sleeps, at most ``timeout`` seconds) for the gateway to release earlier outputs.
        OutputArenaExhausted when ``nbytes`` exceeds the area or the wait times out."""
        if nbytes > self.output_capacity:
            raise OutputArenaExhausted(
                f"outputs of {nbytes} bytes exceed the worker's output arena of "
                f"{self.output_capacity} bytes"
            )
        deadline = time.monotonic() + timeout
        pause = 0.00005
        while True:
            offset = self._outputs.try_alloc(nbytes, self._words[_W_OUT_RELEASED])
            if offset is not None:
                self._words[_W_OUT_ALLOCATED] = self._outputs.allocated
                return offset
            if time.monotonic() >= deadline:
                raise OutputArenaExhausted(
                    f"no room for outputs of {nbytes} bytes in the worker's output arena of "
                    f"{self.output_capacity} bytes after {timeout:g} s: earlier outputs were "
                    "not released"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.001)

    @property
    def output_allocated(self) -> int:
        """Monotonic end of the newest output block (a run reply's ``out_end``)."""
        return self._outputs.allocated

    # -- both sides -----------------------------------------------------------------------------

    def input_view(self, offset: int, nbytes: int) -> memoryview:
        """Writable view of ``nbytes`` of the input area at ``offset``; ValueError if outside."""
        return self._slice(self._input, offset, nbytes)

    def output_view(self, offset: int, nbytes: int) -> memoryview:
        """Writable view of ``nbytes`` of the output area at ``offset``; ValueError if outside."""
        return self._slice(self._output, offset, nbytes)

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
        for view in self._views:
            view.release()
        self._views.clear()
        try:
            self._mmap.close()
        except BufferError:
            log.debug("channel %d: views still exported; unmapped when they go", self.index)
        del self._mmap
        for fd in (self.memfd, self.submit_fd, self.complete_fd):
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
