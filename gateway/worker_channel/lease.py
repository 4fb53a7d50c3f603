"""Who may read a run's outputs in shared memory, and when the worker gets the space back.

Responses are encoded straight from the worker's output area: the arrays a run hands out are
read-only numpy views on it (``writeable=False``), never copies. The ownership rule:

- Each run's output range is covered by one :class:`OutputLease`, a reference count, created by
  the run link that reads the run's reply. The run's result (:class:`RunResult`) holds the first
  reference.
- Whoever hands views to a request part shares the run (:meth:`RunResult.share`): the part gets
  the views with one reference of its own, as :class:`Outputs`. The batcher shares each
  request's rows this way, then returns the run's own reference (:meth:`RunResult.release`).
  Rows nobody receives (padding, a request that left: cancelled, expired, failed) hold nothing.
- The holder of an :class:`Outputs` returns its reference exactly once
  (:meth:`Outputs.release`): a protocol handler in the ``finally`` that follows encoding (the
  outermost point of the call, so errors, cancellation and deadlines return it too); code that
  copies the rows (split reassembly: :func:`gather_chunks`, MultiInference tasks, warmup) as soon
  as it has them.
- A reference is never held while awaiting another run: the output area is a ring, so a held
  range stops the worker once it comes round to it, and the awaited run could be the one that
  cannot be written (a deadlock). Encoding right after the await is synchronous.
- An :class:`Outputs` that can no longer reach its holder (its awaiter was cancelled as it
  resolved) is released where it is awaited.
- When the count reaches 0 the range goes back to the channel
  (:meth:`channel.shm.channel.Channel.release_outputs`, in any order); no view may be read after
  that, since the worker writes its next outputs there.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from channel.shm.channel import Channel
from channel.span_wire import WorkerSpans


class OutputLease:
    """References to one run's output range in ``channel`` (the range a reply's ``out_end``
    closes, in completion order); the range is held from creation."""

    __slots__ = ("_channel", "_out_end", "refs")

    def __init__(self, channel: Channel, out_end: int) -> None:
        self._channel = channel
        self._out_end = out_end if channel.hold_outputs(out_end) else None
        self.refs = 1
        """References not yet returned (0: the range is back with the worker)."""

    def acquire(self) -> OutputLease:
        """One more reference (for a request part that receives views); returns ``self``."""
        if self.refs <= 0:
            raise RuntimeError("output lease already released")
        self.refs += 1
        return self

    def release(self) -> None:
        """Return one reference; the last one hands the range back to the worker. A channel
        already closed (worker gone) has nothing to hand back."""
        if self.refs <= 0:
            raise RuntimeError("output lease released more often than acquired")
        self.refs -= 1
        if self.refs == 0 and self._out_end is not None and not self._channel.closed:
            self._channel.release_outputs(self._out_end, held=True)


class Outputs(dict[str, np.ndarray]):
    """One request part's output arrays (name → array) with the lease reference they hold.

    ``lease`` is None when the arrays are owned (copies, or a fake worker's arrays).
    """

    __slots__ = ("lease",)

    def __init__(self, arrays: dict[str, np.ndarray], lease: OutputLease | None = None) -> None:
        dict.__init__(self, arrays)
        self.lease = lease

    def release(self) -> None:
        """Return this part's reference (idempotent: the second call does nothing)."""
        lease, self.lease = self.lease, None
        if lease is not None:
            lease.release()


@dataclass
class RunResult:
    """Outputs of one run: read-only views on the worker's output area, readable while
    ``lease`` (the run's own reference; None for owned arrays) is held."""

    outputs: dict[str, np.ndarray]
    compute_us: float
    spans: WorkerSpans | None = None
    """The worker's spans, when the run was traced (still encoded)."""
    lease: OutputLease | None = None

    def share(self, rows: dict[str, np.ndarray]) -> Outputs:
        """``rows`` (views on this run's outputs) for one request part, holding one reference of
        their own; the run's reference is still held."""
        return Outputs(rows, None if self.lease is None else self.lease.acquire())

    def release(self) -> None:
        """Return the run's own reference (once; later calls do nothing)."""
        lease, self.lease = self.lease, None
        if lease is not None:
            lease.release()


class _Held(Protocol):
    def release(self) -> None: ...


H = TypeVar("H", bound=_Held)


async def take(future: asyncio.Future[H]) -> H:
    """What ``future`` resolves with (its holder now owns the reference); if the awaiter is
    cancelled instead, the reference a resolved result holds is returned here."""
    try:
        return await future
    except asyncio.CancelledError:
        release_result(future)
        raise


def release_result(future: asyncio.Future[Any]) -> None:
    """Return the reference a resolved ``future`` holds, for an awaiter that cannot take its
    result (cancelled as it resolved); nothing when it failed, was cancelled or holds none."""
    if future.done() and not future.cancelled() and future.exception() is None:
        result = future.result()
        release = getattr(result, "release", None)
        if release is not None:
            release()


async def gather_chunks(futures: list[asyncio.Future[Outputs]], sizes: list[int]) -> Outputs:
    """Await a split request's chunks (``sizes`` rows each) in order, copying each into the
    request's own arrays and returning its reference at once: a chunk held while a later one
    waits could keep the worker from writing that very chunk. On any failure cancel the chunks
    still waiting (they leave) and return the references of those that resolved."""
    arrays: dict[str, np.ndarray] = {}
    row, rows = 0, sum(sizes)
    try:
        for future, size in zip(futures, sizes, strict=True):
            chunk = await future
            try:
                for name, part in chunk.items():
                    if name not in arrays:
                        arrays[name] = np.empty((rows, *part.shape[1:]), part.dtype)
                    arrays[name][row : row + size] = part
            finally:
                chunk.release()
            row += size
    except BaseException:
        for future in futures:
            if future.done():
                release_result(future)
            else:
                future.cancel()
        raise
    return Outputs(arrays)
