"""The gateway's end of each worker (id → future table) and least-loaded routing of runs.

A :class:`WorkerLink` owns one worker's :class:`~channel.shm.channel.Channel` and speaks the
typed messages of :mod:`channel.messages` over it. Requests get an id and a future; the
completion doorbell (watched with ``loop.add_reader``) drains replies in order, wraps run outputs
as read-only views on shared memory under an :class:`~gateway.parallel.lease.OutputLease` (the
ownership rule is in :mod:`gateway.parallel.lease`), frees the input space and resolves the
future — only ``if not fut.done()``. Every failure path resolves every future:
:meth:`WorkerLink.fail_all` is called when the worker dies or is retired.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from channel import messages
from channel.dtypes import dtype_name
from channel.messages import (
    LoadReply,
    OkReply,
    PingReply,
    Ready,
    Reply,
    Request,
    RunReply,
    TensorDesc,
)
from channel.shm.channel import Channel, ChannelFull
from channel.shm.payload import read_tensor, tensor_nbytes, write_tensor
from channel.wire import WorkerSpans
from gateway.errors import Internal, ResourceExhausted, ServingError, Unavailable, from_wire
from gateway.parallel.lease import OutputLease
from gateway.parallel.watchdog import RunTimes

log = logging.getLogger(__name__)

ALIGN = 64
"""Byte alignment of each tensor inside a batch's input block."""


@dataclass
class RunResult:
    """Outputs of one run: read-only views on the worker's output area, readable while
    ``lease`` (the run's reference; None for owned arrays) is held."""

    outputs: dict[str, np.ndarray]
    compute_us: float
    spans: WorkerSpans | None = None
    """The worker's spans, when the run was traced (still encoded)."""
    lease: OutputLease | None = None

    def release(self) -> None:
        """Return the run's reference (once; later calls do nothing)."""
        lease, self.lease = self.lease, None
        if lease is not None:
            lease.release()


@dataclass
class _Pending:
    future: asyncio.Future[Any]
    input_offset: int | None
    is_run: bool
    key: str = ""
    rows: int = 0
    sent_at: float = 0.0


class WorkerLink:
    """One worker process's channel, its pending requests, and its load (runs in flight).

    ``on_run_done`` is called after each run completes or fails (capacity was freed).
    """

    def __init__(
        self,
        index: int,
        channel: Channel,
        loop: asyncio.AbstractEventLoop,
        *,
        on_run_done: Callable[[], None] | None = None,
        run_times: RunTimes | None = None,
    ) -> None:
        self.index = index
        self.channel = channel
        self.pid: int | None = None
        self.loaded: set[str] = set()
        self.alive = False
        self.runs_in_flight = 0
        self.on_run_done = on_run_done
        self.run_times = run_times
        self.last_run_done_at = 0.0
        """``time.monotonic()`` when this worker last finished a run."""
        self._loop = loop
        self._ids = itertools.count(messages.READY_ID + 1)
        self._pending: dict[int, _Pending] = {}
        self._closed = False
        self.ready: asyncio.Future[Ready] = loop.create_future()
        """Resolves when the worker posts its ``ready`` message (it then accepts requests)."""
        self._pending[messages.READY_ID] = _Pending(self.ready, None, False)
        loop.add_reader(channel.complete_fd, self._on_completions)

    # -- requests ---------------------------------------------------------------------------
    def load(
        self,
        *,
        key: str,
        path: str,
        platform: str,
        intra_op: int,
        inter_op: int,
        tags: Sequence[str],
    ) -> asyncio.Future[LoadReply]:
        """Load a servable (allowed before the worker is marked alive); the reply carries its
        signature."""
        request = messages.load_request(
            next(self._ids),
            key=key,
            path=path,
            platform=platform,
            intra_op=intra_op,
            inter_op=inter_op,
            tags=tags,
        )
        return self._send(request, input_offset=None)

    def unload(self, key: str) -> asyncio.Future[OkReply]:
        return self._send(messages.unload_request(next(self._ids), key=key), input_offset=None)

    def ping(self, key: str | None = None) -> asyncio.Future[PingReply]:
        """Liveness; with ``key``, the reply's ``runs`` counts that key's runs in the worker."""
        return self._send(messages.ping_request(next(self._ids), key=key), input_offset=None)

    def stop(self) -> asyncio.Future[OkReply]:
        """Ask the worker to reply and exit 0; later requests are answered UNAVAILABLE."""
        return self._send(messages.stop_request(next(self._ids)), input_offset=None)

    def submit(
        self,
        key: str,
        layout: Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]],
        fill: Fill,
        outputs: Sequence[str] | None,
        deadline: float | None,
        signature: str = "",
        trace: tuple[int, int] | None = None,
    ) -> asyncio.Future[RunResult]:
        """Lay out a batch in this worker's input area, let ``fill`` write it, post the run.

        Synchronous, so choosing a worker and claiming its slot happen in one step. ``layout``
        gives each input's dtype and shape; ``fill(name, dest)`` writes input ``name`` into
        ``dest`` — a numpy view on shared memory for numeric dtypes (the rows land there
        directly: no intermediate concatenation), a temporary object array for strings.
        Raises ResourceExhausted when the input area cannot hold the batch right now. The
        future fails with Unavailable when the worker dies, or with the worker's error.
        ``trace``: the batch span's (trace id, span id), for the worker's spans (None: untraced).
        """
        strings: dict[str, np.ndarray] = {}
        sizes: dict[str, int] = {}
        for name, (dtype, shape) in layout.items():
            if dtype.kind == "O":
                strings[name] = np.empty(shape, dtype=object)
                fill(name, strings[name])
                sizes[name] = tensor_nbytes(strings[name])
            else:
                sizes[name] = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        total = sum(_aligned(n) for n in sizes.values())
        offset = self.channel.alloc_input(max(total, ALIGN))
        if offset is None:
            raise ResourceExhausted(
                f"worker {self.index} shared-memory input area is full "
                f"(batch needs {total} bytes); retry later"
            )
        descs: list[TensorDesc] = []
        cursor = offset
        try:
            for name, (dtype, shape) in layout.items():
                view = self.channel.input_view(cursor, sizes[name])
                if name in strings:
                    write_tensor(view, strings[name])
                else:
                    fill(name, np.ndarray(shape, dtype=dtype, buffer=view))
                descs.append(
                    {
                        "name": name,
                        "dtype": dtype_name(dtype),
                        "shape": list(shape),
                        "offset": cursor,
                        "nbytes": sizes[name],
                    }
                )
                cursor += _aligned(sizes[name])
            request = messages.run_request(
                next(self._ids),
                key=key,
                inputs=descs,
                outputs=outputs,
                deadline=deadline,
                signature=signature,
                trace=trace,
            )
            future: asyncio.Future[RunResult] = self._send(request, input_offset=offset)
        except BaseException:
            self.channel.free_input(offset)
            raise
        pending = self._pending[request["id"]]
        pending.key, pending.sent_at = key, time.monotonic()
        pending.rows = next((shape[0] for _, shape in layout.values() if shape), 0)
        return future

    def oldest_run(self) -> tuple[str, int, float] | None:
        """The run this worker computes now: its servable key, rows and ``time.monotonic()``
        since when it computes (None when no run is pending)."""
        run = next((p for p in self._pending.values() if p.is_run), None)
        if run is None:
            return None
        return run.key, run.rows, max(run.sent_at, self.last_run_done_at)

    def _send(self, request: Request, *, input_offset: int | None) -> asyncio.Future[Any]:
        if not self.alive and request["op"] != "load":
            raise Unavailable(f"worker {self.index} is not available")
        future: asyncio.Future[Any] = self._loop.create_future()
        try:
            self.channel.submit(messages.encode(request))
        except ChannelFull as exc:
            raise ResourceExhausted(f"worker {self.index} request ring is full") from exc
        is_run = request["op"] == "run"
        self._pending[request["id"]] = _Pending(future, input_offset, is_run)
        if is_run:
            self.runs_in_flight += 1
        return future

    # -- completions ------------------------------------------------------------------------
    def _on_completions(self) -> None:
        if self._closed:
            return
        runs_done = 0
        for data in self.channel.completions():
            try:
                reply = messages.decode_reply(data)
            except ValueError as exc:
                log.error("worker %d: %s", self.index, exc)
                continue
            pending = self._pending.pop(reply["id"], None)
            if pending is None:
                log.warning("worker %d sent a reply for an unknown id: %r", self.index, reply)
                continue
            result: Any = reply
            error: ServingError | None = None
            if pending.is_run:
                self.runs_in_flight -= 1
                result, error = self._take_run_reply(reply)
                runs_done += 1
                self.last_run_done_at = time.monotonic()
                if self.run_times is not None and reply["ok"]:
                    compute_s = cast(RunReply, reply)["compute_us"] / 1e6
                    self.run_times.record(pending.key, pending.rows, compute_s)
            elif reply["ok"] is False:
                error = from_wire(reply["code"], reply["message"])
            if pending.input_offset is not None:
                self.channel.free_input(pending.input_offset)
            if pending.future.done():
                if isinstance(result, RunResult):
                    result.release()
                continue
            if error is not None:
                pending.future.set_exception(error)
            else:
                pending.future.set_result(result)
        # Capacity is announced once the replies' input space is free again.
        if runs_done and self.on_run_done is not None:
            self.on_run_done()

    def _take_run_reply(self, reply: Reply) -> tuple[RunResult | None, ServingError | None]:
        """Wrap a run's outputs as read-only views on the worker's output area, held by a lease
        on the range the reply's ``out_end`` closes (released at once on failure)."""
        if reply["ok"] is False:
            if "out_end" in reply:
                self.channel.release_outputs(reply["out_end"])
            return None, from_wire(reply["code"], reply["message"])
        run = cast(RunReply, reply)  # the pending request was a run
        try:
            outputs: dict[str, np.ndarray] = {}
            for t in run["outputs"]:
                view = self.channel.output_reader(t["offset"], t["nbytes"])
                outputs[t["name"]] = read_tensor(view, t["dtype"], t["shape"])
        except (KeyError, TypeError, ValueError) as exc:
            self.channel.release_outputs(run["out_end"])
            return None, Internal(f"worker {self.index} sent unreadable outputs: {exc}")
        lease = OutputLease(self.channel, run["out_end"])
        return RunResult(outputs, run["compute_us"], run.get("spans"), lease), None

    def fail_all(self, error: ServingError) -> None:
        """Resolve every pending future with ``error`` (worker died or is being retired)."""
        pending, self._pending = self._pending, {}
        self.runs_in_flight = 0
        for item in pending.values():
            if not item.future.done():
                item.future.set_exception(error)
                # Nobody may await a control future (e.g. a ping); mark it retrieved.
                item.future.exception()

    def close(self, error: ServingError) -> None:
        """Stop watching the channel, fail what is pending, release the channel. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.alive = False
        self._loop.remove_reader(self.channel.complete_fd)
        self.fail_all(error)
        self.channel.close()


class Dispatcher:
    """Chooses the least-loaded live worker hosting a servable, with a per-worker cap.

    At most ``max_in_flight`` runs are outstanding per worker (one computing, the rest queued in its
    ring, so the worker never idles between runs). Queuing beyond that is the batch schedulers' job:
    :meth:`pick` answers None when every worker is at the cap, and a scheduler registers with
    :meth:`on_capacity` to be called back (once, in registration order) when a slot frees.
    """

    def __init__(self, *, max_in_flight: int = 2) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.links: list[WorkerLink] = []
        self.max_in_flight = max_in_flight
        self.run_times = RunTimes()
        """Compute times per servable, for hung-run detection (each link records into it)."""
        self._listeners: dict[Callable[[], None], None] = {}

    def add_link(self, link: WorkerLink) -> None:
        """Route to ``link`` (replacing a retired link of the same index); the link calls
        :meth:`wake` when a run finishes (its ``on_run_done``)."""
        self.links = [x for x in self.links if x.index != link.index] + [link]
        self.links.sort(key=lambda x: x.index)

    def pick(self, key: str) -> WorkerLink | None:
        """The least-loaded live worker hosting ``key`` with a free slot, or None if all are busy.

        Raises Unavailable when no live worker hosts ``key`` at all.
        """
        candidates = [link for link in self.links if link.alive and key in link.loaded]
        if not candidates:
            raise Unavailable(f"no worker is serving {key} right now; retry later")
        best = min(candidates, key=lambda link: link.runs_in_flight)
        return best if best.runs_in_flight < self.max_in_flight else None

    def on_capacity(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` once, the next time a slot may have freed (idempotent per listener)."""
        self._listeners[listener] = None

    def wake(self) -> None:
        """A run finished or a worker came up: call every registered listener once, in order."""
        listeners, self._listeners = self._listeners, {}
        for listener in listeners:
            listener()


Fill = Callable[[str, np.ndarray], None]
"""Writes input ``name`` into the destination array it is given."""


def _aligned(nbytes: int) -> int:
    return (nbytes + ALIGN - 1) // ALIGN * ALIGN
