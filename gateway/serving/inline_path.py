"""The short path of a version that runs in this front end: compiled check, run, answer.

:class:`InlinePlan` is one placed version's signature compiled once: each input's name, dtype and
fixed dims past the first, so a request is checked with a few comparisons
(:meth:`InlinePlan.rows_of`, and a codec's own :meth:`~gateway.serving.inputs.Decoded.fast_arrays`
straight from its wire form). Then:

- **batching off** (TF Serving's default; ``solo`` options): the call runs alone, at once, on the
  loop: one runtime call (:meth:`InlinePlan.run_one`);
- **batching on** with ``batch_timeout_micros`` 0: the calls of one loop turn join one batch,
  run at the end of the turn (a turn's calls past ``max_batch_size`` rows start another), cut
  into runs of at most the version's measured ``max_rows``; each call gets a future of its own
  rows (:meth:`InlinePlan.join`); a call whose deadline passed or that was cancelled leaves
  before the run. A timeout asks calls of every size to wait for each other: such a version's
  calls go through its batch queue to the workers (:meth:`InlinePlans.get` answers None).

Either way the answer is None (:data:`RERUN`) when the run was stopped at the wall-clock limit:
the caller sends the call to the workers, which hold every version. Batch observers (metrics,
traces, server timing) see each run as they see a worker's batch; padding is never applied here
(the runtime takes any number of rows).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from time import perf_counter
from typing import Any, Final

import numpy as np

from channel.span_wire import SpanForm
from channel.telemetry import new_span_id
from gateway.batching.observer import BatchObserver
from gateway.batching.policy import BatchingPolicy
from gateway.batching.queues import ObserverFactory
from gateway.config.batching_options import BatchingOptions
from gateway.config.model_config import ConfigError
from gateway.errors import DeadlineExceeded, FailedPrecondition
from gateway.runs.inline_runs import InlineRuns
from gateway.runs.inline_session import InlineSession
from gateway.serving.inputs import Arrays, ExpectedInput
from gateway.serving.registry import Servable
from gateway.serving.signature import Signature
from gateway.worker_channel.lease import RunResult

RERUN: Final[Any] = None
"""What a stopped run answers: run the call on the workers."""

RunOutputs = dict[str, np.ndarray]


class InlinePlan:
    """``signature`` of the version ``session`` runs, under batching ``options``, observed by
    ``observer`` (None: nothing observes it)."""

    def __init__(
        self,
        session: InlineSession,
        signature: Signature,
        options: BatchingOptions,
        observer: BatchObserver | None,
    ) -> None:
        self.session = session
        self.signature = signature
        self.inputs = tuple(
            ExpectedInput(spec.name, spec.dtype, tuple(spec.shape[1:] if spec.shape else ()))
            for spec in signature.inputs
        )
        self.count = len(self.inputs)
        self.row_bytes = sum(spec.tail_elements * spec.dtype.itemsize for spec in self.inputs)
        """Bytes of one row of every input."""
        self.outputs = signature.output_names()
        """Every output's name (a call that filters none runs them all)."""
        self.max_rows = session.max_rows
        """The most rows one run here may have (measured when the version was placed)."""
        self.solo = options.solo
        self.max_batch_rows = options.max_batch_size
        self.observer = observer
        self._compute_span = SpanForm.of("compute", {"tensorgate.model": session.key})
        self._pid = os.getpid()
        self._turn: list[_Member] | None = None
        self._turn_rows = 0

    def matches(self, arrays: Arrays) -> int:
        """The rows of ``arrays`` when they are exactly this signature's inputs (names, dtypes,
        dims past the first) with as many rows each; else -1."""
        if len(arrays) != self.count:
            return -1
        rows = -1
        for spec in self.inputs:
            array = arrays.get(spec.name)
            if array is None or array.dtype != spec.dtype:
                return -1
            shape = array.shape
            if not shape or shape[1:] != spec.tail or (rows >= 0 and shape[0] != rows):
                return -1
            rows = shape[0]
        return rows

    # -- batching off -----------------------------------------------------------------------------
    def run_one(self, arrays: Arrays, rows: int, outputs: list[str]) -> RunOutputs | None:
        """Run one call alone, now; its outputs, or :data:`RERUN`."""
        observer = self.observer
        if observer is None:
            return self.session.run(arrays, outputs)
        tag = observer.on_enqueue()
        if not observer.alone(tag):  # traced or timed: the batch's full record
            record = observer.on_batch((tag,), (0.0,), (rows,), rows)
            return self._observed(record, arrays, outputs)
        started = perf_counter()
        try:
            result = self.session.run(arrays, outputs)
        except BaseException:
            observer.on_alone(tag, rows, None)
            raise
        observer.on_alone(tag, rows, None if result is None else perf_counter() - started)
        return result

    def _observed(self, record: Any, arrays: Arrays, outputs: list[str]) -> RunOutputs | None:
        trace = None if record is None else record.trace
        start_ns = time.time_ns() if trace is not None else 0
        started = time.perf_counter()
        try:
            result = self.session.run(arrays, outputs)
        except BaseException:
            if record is not None:
                record.done(None)
            raise
        if record is not None:
            spans = None
            if trace is not None and result is not None:
                spans = self._compute_span.spans(
                    start_ns, time.time_ns(), new_span_id(), trace[1], self._pid
                )
            compute_us = (time.perf_counter() - started) * 1e6
            record.done(None if result is None else RunResult(result, compute_us, spans))
        return result

    # -- batching on ------------------------------------------------------------------------------
    def join(
        self, arrays: Arrays, rows: int, outputs: list[str], deadline: float | None
    ) -> asyncio.Future[RunOutputs | None]:
        """Join this turn's batch; a future of the call's own rows of ``outputs`` (or
        :data:`RERUN`)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[RunOutputs | None] = loop.create_future()
        tag = None if self.observer is None else self.observer.on_enqueue()
        member = _Member(arrays, rows, outputs, deadline, future, time.perf_counter(), tag)
        turn = self._turn
        if turn is None:
            turn = self._turn = []
            self._turn_rows = 0
            loop.call_soon(self._run_turn, turn)
        turn.append(member)
        self._turn_rows += rows
        if self._turn_rows >= self.max_batch_rows:
            self._turn = None  # full: it runs as scheduled, the next call starts another
        return future

    def _run_turn(self, turn: list[_Member]) -> None:
        if self._turn is turn:
            self._turn = None
        now = time.monotonic()
        live = []
        for member in turn:
            if member.future.done():  # cancelled: its caller left
                continue
            if member.deadline is not None and now >= member.deadline:
                member.future.set_exception(
                    DeadlineExceeded("Deadline exceeded while waiting in the batch queue")
                )
                continue
            live.append(member)
        limit = min(self.max_rows, self.max_batch_rows)
        chunk: list[_Member] = []
        rows = 0
        for member in live:
            if chunk and rows + member.rows > limit:
                self._run_chunk(chunk, rows)
                chunk, rows = [], 0
            chunk.append(member)
            rows += member.rows
        if chunk:
            self._run_chunk(chunk, rows)

    def _run_chunk(self, members: Sequence[_Member], rows: int) -> None:
        names = members[0].outputs
        if any(m.outputs != names for m in members):
            names = self.signature.output_names()
        if len(members) == 1:
            arrays = members[0].arrays
        else:
            arrays = {
                spec.name: np.concatenate([m.arrays[spec.name] for m in members])
                for spec in self.inputs
            }
        record = None
        observer = self.observer
        if observer is not None:
            now = time.perf_counter()
            record = observer.on_batch(
                [m.tag for m in members],
                [now - m.queued for m in members],
                [m.rows for m in members],
                rows,
            )
        try:
            result = self._observed(record, arrays, names)
        except Exception as exc:
            for member in members:
                if not member.future.done():
                    member.future.set_exception(exc)
            return
        start = 0
        for member in members:
            end = start + member.rows
            if member.future.done():
                start = end
                continue
            if result is None:
                member.future.set_result(RERUN)
            elif len(members) == 1:
                member.future.set_result(result)
            else:
                member.future.set_result({n: result[n][start:end] for n in member.outputs})
            start = end


class _Member:
    """One call in a turn's batch."""

    __slots__ = ("arrays", "deadline", "future", "outputs", "queued", "rows", "tag")

    def __init__(
        self,
        arrays: Arrays,
        rows: int,
        outputs: list[str],
        deadline: float | None,
        future: asyncio.Future[RunOutputs | None],
        queued: float,
        tag: object,
    ) -> None:
        self.arrays = arrays
        self.rows = rows
        self.outputs = outputs
        self.deadline = deadline
        self.future = future
        self.queued = queued
        self.tag = tag


class InlinePlans:
    """The plans of the versions ``runs`` places here, per (servable key, signature name), made
    on first use with the servable's batching options from ``policy`` and its observer from
    ``observer``; a version placed again (a new session) gets new plans."""

    def __init__(
        self,
        runs: InlineRuns,
        policy: BatchingPolicy,
        observer: ObserverFactory[Servable] | None = None,
    ) -> None:
        self.runs = runs
        self._policy = policy
        self._observer = observer
        self._plans: dict[tuple[str, str], tuple[InlineSession, InlinePlan | None]] = {}
        """(servable key, signature) → the session it was made for, and the plan (None: the
        servable's batching options keep its calls in the batch queue)."""

    def get(self, servable: Servable, signature: Signature) -> InlinePlan | None:
        """The plan of ``signature`` when ``servable`` runs here now, else None."""
        session = self.runs.sessions.get(servable.key)
        if session is None:
            return None
        key = (servable.key, signature.name)
        made = self._plans.get(key)
        if made is not None and made[0] is session:
            return made[1]
        try:
            options = self._policy.for_servable(servable)
        except ConfigError as exc:
            raise FailedPrecondition(str(exc)) from None
        plan = None
        if options.solo or options.batch_timeout_micros == 0:  # else calls of every size wait
            observer = None if self._observer is None else self._observer(servable, signature.name)
            plan = InlinePlan(session, signature, options, observer)
        self._plans[key] = (session, plan)
        if len(self._plans) > 4 * len(self.runs.sessions) + 16:
            self._forget_stale()
        return plan

    def _forget_stale(self) -> None:
        sessions = self.runs.sessions
        self._plans = {
            key: made for key, made in self._plans.items() if sessions.get(key[0]) is made[0]
        }
