"""The run link: a front end's runs on one worker, and their outputs under a lease.

:meth:`RunLink.submit` lays a batch out in the worker's input area and posts the run; its reply
frees that input space and becomes a :class:`~gateway.parallel.lease.RunResult` whose outputs are
read-only views on the worker's output area, held by an
:class:`~gateway.parallel.lease.OutputLease` (the ownership rule is in
:mod:`gateway.parallel.lease`). Futures resolve only ``if not fut.done()``; a result nobody awaits
any more gives its space back at once. The link's load (runs in flight) and the servables routed to
it (:attr:`RunLink.routed`) are what the :class:`~gateway.parallel.dispatcher.Dispatcher` routes
by; the supervisor decides the latter.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from channel import messages
from channel.dtypes import dtype_name
from channel.messages import Reply, RunReply, TensorDesc
from channel.shm.payload import read_tensor, tensor_nbytes, write_tensor
from gateway.errors import (
    InputAreaFull,
    InputTooLarge,
    Internal,
    ServingError,
    Unavailable,
    from_wire,
)
from gateway.parallel.endpoint import Endpoint
from gateway.parallel.lease import OutputLease, RunResult
from gateway.parallel.watchdog import RunTimes

ALIGN = 64
"""Byte alignment of each tensor inside a batch's input block."""


Fill = Callable[[str, np.ndarray], None]
"""Writes input ``name`` into the destination array it is given."""


@dataclass
class _Run:
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
    each successful run's compute time (hung-run detection)."""

    def __init__(
        self,
        endpoint: Endpoint,
        loop: asyncio.AbstractEventLoop,
        *,
        on_run_done: Callable[[], None] | None = None,
        run_times: RunTimes | None = None,
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
        self._runs: dict[int, _Run] = {}
        self._finished = 0
        endpoint.attach(self)

    @property
    def alive(self) -> bool:
        return self.endpoint.alive

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
        Raises InputAreaFull when the input area cannot hold the batch right now,
        InputTooLarge when it never could (both RESOURCE_EXHAUSTED). The future fails with
        Unavailable when the worker dies, or with the worker's error.
        ``trace``: the batch span's (trace id, span id), for the worker's spans (None: untraced).
        """
        endpoint = self.endpoint
        if not endpoint.alive:
            endpoint.check_open()  # gone: the reason it closed with
            raise Unavailable(f"worker {self.index} is not available")
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
        self._check_capacity(total)
        offset = self.channel.alloc_input(max(total, ALIGN))
        if offset is None:
            raise self._full(total)
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
                self.endpoint.next_id(),
                key=key,
                inputs=descs,
                outputs=outputs,
                deadline=deadline,
                signature=signature,
                trace=trace,
            )
            endpoint.post_open(self, request)
        except BaseException:
            self.channel.free_input(offset)
            raise
        future: asyncio.Future[RunResult] = self._loop.create_future()
        rows = next((shape[0] for _, shape in layout.values() if shape), 0)
        alone = not self.runs_in_flight
        self._runs[request["id"]] = _Run(future, offset, key, rows, time.monotonic(), alone)
        self.runs_in_flight += 1
        return future

    def check_room(self, layout: Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]]) -> None:
        """Raise what :meth:`submit` would for a batch of ``layout`` that cannot be placed now
        (InputAreaFull) or ever (InputTooLarge), before anything is written; string inputs count
        as empty here (their size is known once they are encoded)."""
        total = sum(
            _aligned(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
            for dtype, shape in layout.values()
            if dtype.kind != "O"
        )
        self._check_capacity(total)
        if not self.channel.input_fits(max(total, ALIGN)):
            raise self._full(total)

    def _check_capacity(self, total: int) -> None:
        capacity = self.channel.input_capacity
        if total > capacity:
            raise InputTooLarge(
                f"the batch needs {total} bytes, more than worker {self.index}'s whole "
                f"shared-memory input area of {capacity} bytes (raise --worker_arena_mb)"
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

    # -- replies (the endpoint's :class:`~gateway.parallel.endpoint.Replies`) -----------------
    def take(self, reply: Reply) -> None:
        run = self._runs.pop(reply["id"], None)
        if run is None:
            return  # failed already (the endpoint closed)
        self.runs_in_flight -= 1
        result, error = self._read(reply)
        self._finished += 1
        self.last_run_done_at = now = time.monotonic()
        if reply["ok"]:
            compute_s = cast(RunReply, reply)["compute_us"] / 1e6
            if self.run_times is not None:
                self.run_times.record(run.key, run.rows, compute_s)
            if run.alone:
                hop = now - run.sent_at - compute_s
                self.hop_s = hop if self.hop_s is None else self.hop_s + (hop - self.hop_s) / 16
        self.channel.free_input(run.input_offset)
        if run.future.done():
            if result is not None:
                result.release()
        elif error is not None:
            run.future.set_exception(error)
        else:
            run.future.set_result(cast(RunResult, result))

    def taken(self) -> None:
        # Capacity is announced once the replies' input space is free again.
        if self._finished:
            self._finished = 0
            if self.on_run_done is not None:
                self.on_run_done()

    def fail_all(self, error: ServingError) -> None:
        runs, self._runs = self._runs, {}
        self.runs_in_flight = 0
        for run in runs.values():
            if not run.future.done():
                run.future.set_exception(error)
                run.future.exception()
        if runs and self.on_run_done is not None:
            # Its slots are free: whoever waits for capacity looks again (the other workers'),
            # once the endpoint has finished closing.
            self._loop.call_soon(self.on_run_done)

    def _read(self, reply: Reply) -> tuple[RunResult | None, ServingError | None]:
        """Wrap a run's outputs as read-only views on the worker's output area, held by a lease
        on the range the reply's ``out_end`` closes (released at once on failure)."""
        if reply["ok"] is False:
            if "out_end" in reply:
                self.channel.release_outputs(reply["out_end"])
            return None, from_wire(reply["code"], reply["message"])
        run = cast(RunReply, reply)  # the request was a run
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


def _aligned(nbytes: int) -> int:
    return (nbytes + ALIGN - 1) // ALIGN * ALIGN
