"""The run link: a front end's runs on one worker, and their outputs under a lease.

:meth:`RunLink.submit` lays a batch out in the worker's input area and posts the run; its reply
frees that input space and becomes a :class:`~gateway.worker_channel.lease.RunResult` whose outputs
are read-only views on the worker's output area, held by an
:class:`~gateway.worker_channel.lease.OutputLease` (the ownership rule is in
:mod:`gateway.worker_channel.lease`). Futures resolve only ``if not fut.done()``; a result nobody
awaits any more gives its space back at once. The link's load (runs in flight) and the servables
routed to it (:attr:`RunLink.routed`) are what the :class:`~gateway.runs.dispatcher.Dispatcher`
routes by; the supervisor decides the latter.

A run goes from the batch's arrays to its binary descriptor (:mod:`channel.wire`) and from the
binary reply to numpy views on the output area with nothing built in between: no dict per
tensor or per message, no view of a block cut before wrapping it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from channel import messages
from channel.dtypes import CANONICAL_NAMES, NUMPY_DTYPES, dtype_name
from channel.messages import ErrorReply, Reply, RunReply, RunRequest, TensorDesc
from channel.shm.payload import tensor_at, tensor_nbytes, write_tensor
from gateway.errors import (
    InputAreaFull,
    InputTooLarge,
    Internal,
    ServingError,
    Unavailable,
    from_wire,
)
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.lease import OutputLease, RunResult
from gateway.worker_channel.watchdog import RunTimes

ALIGN = 64
"""Byte alignment of each tensor inside a batch's input block."""

Fill = Callable[[str, np.ndarray], None]
"""Writes input ``name`` into the destination array it is given."""

Layout = Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]]
"""Each input's dtype and shape, by name."""


class _Run(NamedTuple):
    future: asyncio.Future[RunResult]
    input_offset: int
    key: str
    rows: int
    sent_at: float
    alone: bool
    """Sent while no other run of this link was in flight (its reply times the hop)."""


class RunLink:
    """Runs over ``endpoint``. ``on_run_done`` is called once the replies of one doorbell are
    taken, when runs completed or failed among them (capacity was freed); ``run_times`` records
    each successful run's compute time (hung-run detection); ``publish`` is told the link's runs
    in flight whenever they change (the front ends' shared load table,
    :mod:`gateway.runs.shared_load`)."""

    def __init__(
        self,
        endpoint: Endpoint,
        loop: asyncio.AbstractEventLoop,
        *,
        on_run_done: Callable[[], None] | None = None,
        run_times: RunTimes | None = None,
        publish: Callable[[int], None] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.index = endpoint.index
        self.channel = endpoint.channel
        self.routed: set[str] = set()
        """Servable keys routed to this worker (set by the supervisor once warm there)."""
        self.runs_in_flight = 0
        self.on_run_done = on_run_done
        self.run_times = run_times
        self.last_run_done_at = 0.0
        """``time.monotonic()`` when this worker last finished a run."""
        self.hop_s: float | None = None
        """Moving average (weight 1/16) of a lone run's reply time less its compute, seconds."""
        self._loop = loop
        self._publish = publish
        self._runs: dict[int, _Run] = {}
        self._finished = 0
        endpoint.attach(self)

    @property
    def alive(self) -> bool:
        return self.endpoint.alive

    def submit(
        self,
        key: str,
        layout: Layout,
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
        Raises InputAreaFull when the input area cannot hold the batch right now,
        InputTooLarge when it never could (both RESOURCE_EXHAUSTED). The future fails with
        Unavailable when the worker dies, or with the worker's error.
        ``trace``: the batch span's (trace id, span id), for the worker's spans (None: untraced).
        """
        endpoint = self.endpoint
        if not endpoint.alive:
            endpoint.check_open()  # gone: the reason it closed with
            raise Unavailable(f"worker {self.index} is not available")
        channel = self.channel
        # Each input: (name, canonical dtype, numpy dtype of its payload, shape, bytes, strings)
        inputs: list[tuple[str, str, np.dtype[Any], tuple[int, ...], int, Any]] = []
        total = 0
        rows = -1  # the leading dimension of the first input that has one
        for name, (dtype, shape) in layout.items():
            if rows < 0 and shape:
                rows = shape[0]
            if dtype.kind in "OSU":  # strings travel as UTF-8 (numpy's fixed-width ones too)
                strings = np.empty(shape, dtype=object)
                fill(name, strings)
                nbytes = tensor_nbytes(strings)
                inputs.append((name, "string", dtype, shape, nbytes, strings))
            else:
                canonical = CANONICAL_NAMES.get(dtype)
                if canonical is None:  # byte-swapped: the payload is native (converted by fill)
                    canonical = dtype_name(dtype)
                    dtype = NUMPY_DTYPES[canonical]
                nbytes = math.prod(shape) * dtype.itemsize
                inputs.append((name, canonical, dtype, shape, nbytes, None))
            total += -(-nbytes // ALIGN) * ALIGN
        if total > channel.input_capacity:
            raise self._too_large(total)
        offset = channel.alloc_input(total or ALIGN)
        if offset is None:
            raise self._full(total)
        area = channel.input_area
        descs: list[TensorDesc] = []
        cursor = offset
        try:
            for name, canonical, dtype, shape, nbytes, strings in inputs:
                if strings is None:
                    fill(name, np.ndarray(shape, dtype, area, cursor))
                else:
                    write_tensor(area[cursor : cursor + nbytes], strings)
                descs.append(tuple.__new__(TensorDesc, (name, canonical, shape, cursor, nbytes)))
                cursor += -(-nbytes // ALIGN) * ALIGN
            request_id = endpoint.next_id()
            names = None if outputs is None else tuple(outputs)
            values = (request_id, key, tuple(descs), names, deadline, signature, trace)
            endpoint.send(self, request_id, messages.encode(tuple.__new__(RunRequest, values)))
        except BaseException:
            channel.free_input(offset)
            raise
        future: asyncio.Future[RunResult] = self._loop.create_future()
        run = (future, offset, key, max(rows, 0), time.monotonic(), not self.runs_in_flight)
        self._runs[request_id] = tuple.__new__(_Run, run)
        self.runs_in_flight += 1
        if self._publish is not None:
            self._publish(self.runs_in_flight)
        return future

    def check_room(self, layout: Layout) -> None:
        """Raise what :meth:`submit` would for a batch of ``layout`` that cannot be placed now
        (InputAreaFull) or ever (InputTooLarge), before anything is written; string inputs count
        as empty here (their size is known once they are encoded)."""
        total = 0
        for dtype, shape in layout.values():
            if dtype.kind not in "OSU":
                total += -(-math.prod(shape) * dtype.itemsize // ALIGN) * ALIGN
        if total > self.channel.input_capacity:
            raise self._too_large(total)
        if not self.channel.input_fits(total or ALIGN):
            raise self._full(total)

    def _too_large(self, total: int) -> InputTooLarge:
        return InputTooLarge(
            f"the batch needs {total} bytes, more than worker {self.index}'s whole "
            f"shared-memory input area of {self.channel.input_capacity} bytes "
            "(raise --worker_arena_mb)"
        )

    def _full(self, total: int) -> InputAreaFull:
        return InputAreaFull(
            f"worker {self.index} shared-memory input area is full "
            f"(batch needs {total} bytes); retry later",
            total,
        )

    def oldest_run(self) -> tuple[str, int, float] | None:
        """The run this worker computes now: its servable key, rows and ``time.monotonic()``
        since when it computes (None when no run is pending)."""
        run = next(iter(self._runs.values()), None)
        if run is None:
            return None
        return run.key, run.rows, max(run.sent_at, self.last_run_done_at)

    # -- replies (the endpoint's :class:`~gateway.worker_channel.endpoint.Replies`) ----------------
    def take(self, reply: Reply) -> None:
        run = self._runs.pop(reply.id if isinstance(reply, RunReply) else reply["id"], None)
        if run is None:
            return  # failed already (the endpoint closed)
        future, input_offset, key, rows, sent_at, alone = run
        self.runs_in_flight -= 1
        if self._publish is not None:
            self._publish(self.runs_in_flight)
        self._finished += 1
        self.last_run_done_at = now = time.monotonic()
        result = error = None
        if isinstance(reply, RunReply):
            result, error = self._read(reply)
            compute_s = reply.compute_us / 1e6
            if self.run_times is not None:
                self.run_times.record(key, rows, compute_s)
            if alone:
                hop = now - sent_at - compute_s
                self.hop_s = hop if self.hop_s is None else self.hop_s + (hop - self.hop_s) / 16
        else:
            failed = cast(ErrorReply, reply)  # a run's one other reply
            if "out_end" in failed:
                self.channel.release_outputs(failed["out_end"])
            error = from_wire(failed["code"], failed["message"])
        self.channel.free_input(input_offset)
        if future.done():
            if result is not None:
                result.release()
        elif error is not None:
            future.set_exception(error)
        elif result is not None:
            future.set_result(result)

    def taken(self) -> None:
        # Capacity is announced once the replies' input space is free again.
        if self._finished:
            self._finished = 0
            if self.on_run_done is not None:
                self.on_run_done()

    def fail_all(self, error: ServingError) -> None:
        runs, self._runs = self._runs, {}
        self.runs_in_flight = 0
        if self._publish is not None:
            self._publish(0)
        for run in runs.values():
            if not run.future.done():
                run.future.set_exception(error)
                run.future.exception()
        if runs and self.on_run_done is not None:
            # Its slots are free: whoever waits for capacity looks again (the other workers'),
            # once the endpoint has finished closing.
            self._loop.call_soon(self.on_run_done)

    def _read(self, reply: RunReply) -> tuple[RunResult | None, ServingError | None]:
        """Wrap a run's outputs as read-only views on the worker's output area, held by a lease
        on the range the reply's ``out_end`` closes (released at once when they do not read)."""
        area = self.channel.output_readonly
        outputs: dict[str, np.ndarray] = {}
        try:
            for desc in reply.outputs:
                outputs[desc.name] = tensor_at(area, desc)
        except ValueError as exc:
            self.channel.release_outputs(reply.out_end)
            return None, Internal(f"worker {self.index} sent unreadable outputs: {exc}")
        lease = OutputLease(self.channel, reply.out_end)
        return RunResult(outputs, reply.compute_us, reply.spans, lease), None
