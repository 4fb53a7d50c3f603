"""The deadline-aware dynamic batcher: one :class:`BatchScheduler` per (servable, signature).

Contract (see :class:`~gateway.config.batching_options.BatchingOptions` for each option):

- Requests form batches as :mod:`gateway.batching.formation` says. Ready batches go, oldest first,
as
  soon as a worker slot is free and fewer than ``num_batch_threads`` of this queue are in flight.
  With a zero timeout a new request does not go at once: the send waits for the end of the
  current loop iteration (``loop.call_soon``), so every request that arrived in the same turn
  shares one batch, one descriptor and one doorbell (work-conserving: no timer, no idle worker).
  Under sustained concurrency (arrivals keep finding the queue busy) an open batch is held for
  company a little longer, up to :data:`~gateway.batching.window.WINDOW_S` after it opened
  (:mod:`gateway.batching.window`): one client at a time never waits.
- Refusals are immediate and never block: a request larger than ``max_batch_size`` →
  INVALID_ARGUMENT (unless splitting is on, which cuts it across batches and reassembles its
  outputs); a full queue or a queue over the latency target → UNAVAILABLE (retryable); a
  request whose deadline ends before its batch could → DEADLINE_EXCEEDED
  (:mod:`gateway.batching.queue_admission`).
- A batch that does not fit the picked worker's input area now stays first in its queue and
  waits for room by :mod:`gateway.runs.input_room`'s rule, bounded by its members' deadlines
  (``--max_inflight_bytes`` bounds what all requests hold meanwhile). One larger than a whole
  input area goes as two halves; a lone request that large is refused (RESOURCE_EXHAUSTED).
- An expired request (its deadline timer fires) or a cancelled one leaves its batch before the batch
  runs and never takes a slot; a batch left empty is not run, and a request that can no longer
  finish in time is dropped with DEADLINE_EXCEEDED at dispatch. Every request gets exactly its own
  rows back, each with its own output selection; padding rows are never returned
  (:mod:`gateway.batching.results`). The rows are read-only views on the worker's output space
  holding one lease reference each: the caller returns it with ``Outputs.release()`` once it has
  encoded them (:mod:`gateway.worker_channel.lease`).
- Every failure resolves every waiting future (only ``if not fut.done()``).

Time comes from an injectable :class:`~gateway.batching.clock.Clock` so tests drive timeouts
deterministically.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.batching import merge, results
from gateway.batching.clock import Clock, LoopClock, Timer
from gateway.batching.formation import Batch, BatchQueue, Task
from gateway.batching.merge import Array, CompatKey
from gateway.batching.observer import BatchObserver
from gateway.batching.queue_admission import QueueAdmission
from gateway.batching.window import ConcurrencyWindow
from gateway.config.batching_options import BatchingOptions
from gateway.errors import (
    DeadlineExceeded,
    InputAreaFull,
    InputTooLarge,
    InvalidArgument,
    ServingError,
    Unavailable,
)
from gateway.runs.batch_runner import BatchRunner
from gateway.runs.dispatcher import Dispatcher
from gateway.worker_channel.lease import Outputs, RunResult, gather_chunks, release_result


@dataclass
class SchedulerStats:
    """Counters since start (rows exclude padding)."""

    batches: int = 0
    rows: int = 0
    padding_rows: int = 0
    expired: int = 0
    cancelled: int = 0
    rejected_full: int = 0
    rejected_late: int = 0


class BatchScheduler:
    """Queues, merges and dispatches the requests of one (servable, signature)."""

    def __init__(
        self,
        *,
        servable_key: str,
        signature: str,
        options: BatchingOptions,
        dispatcher: Dispatcher,
        clock: Clock | None = None,
        observer: BatchObserver | None = None,
    ) -> None:
        self.servable_key = servable_key
        self.signature = signature
        self.options = options
        self.stats = SchedulerStats()
        self.in_flight = 0
        self._running_tasks = 0
        """Requests (or chunks) in the batches in flight."""
        self._dispatcher = dispatcher
        self._clock = clock or LoopClock()
        self._observer = observer
        self._queue = BatchQueue(options, self._clock, self._pump)
        self._threads = max(1, options.num_batch_threads)
        self._admission = QueueAdmission(
            servable_key,
            threads=self._threads,
            max_enqueued_batches=options.max_enqueued_batches,
            solo=options.solo,
            max_queue_delay_s=options.max_queue_delay_s,
        )
        self._runs: set[asyncio.Future[RunResult]] = set()
        self._idle: asyncio.Event | None = None
        self._refusal: ServingError | None = None
        self._end_of_turn = not options.solo and options.batch_timeout_micros == 0
        self._pump_scheduled = False
        self._window = ConcurrencyWindow()
        self._window_timer: Timer | None = None
        self._stalled: Batch | None = None
        """The batch waiting for room in a worker's input area (first in the queue)."""

    # -- observation ------------------------------------------------------------------------------
    @property
    def queued_tasks(self) -> int:
        """Requests (or split chunks) waiting in this queue right now."""
        return self._queue.task_count

    @property
    def queued_batches(self) -> int:
        return len(self._queue)

    @property
    def service_s(self) -> float | None:
        """Moving average of a batch's dispatch-to-completion seconds; None until timed."""
        return self._admission.service_s

    # -- submission -------------------------------------------------------------------------------
    async def submit(
        self, inputs: Mapping[str, Array], outputs: Sequence[str], deadline: float | None
    ) -> Outputs:
        """Queue one validated request; its own rows of ``outputs`` once its batch has run
        (the caller must release them)."""
        if self._refusal is not None:
            raise self._refusal
        now = self._clock.now()
        if deadline is not None and now >= deadline:
            raise DeadlineExceeded("Deadline exceeded before the request was queued")
        options = self.options
        key: CompatKey = ()
        if options.solo:
            size = merge.solo_size(inputs)
        else:
            size = merge.request_size(inputs)
            if size > options.max_batch_size:
                raise InvalidArgument(
                    f"Task size {size} is larger than maximum input batch size "
                    f"{options.max_batch_size}"
                )
            key = merge.compat_key(inputs, pad_variable_length=options.pad_variable_length_inputs)
        chunks, into_open = self._queue.plan(key, size)
        new_batches = len(chunks) - (1 if into_open else 0)
        queued = len(self._queue.batches)
        full = self._admission.queue_full(queued + new_batches)
        if full is not None:
            self.stats.rejected_full += 1
            self._refused("queue_full")
            raise full
        ahead = queued + self.in_flight - (1 if into_open else 0)
        late = self._admission.too_late(now, deadline, ahead)
        if late is not None:
            self.stats.rejected_late += 1
            self._refused("deadline")
            raise late
        if self._end_of_turn:  # in flight iff running tasks: present > 1 iff it found company
            self._window.arrival(self._queue.task_count + self._running_tasks + 1)
        tasks = self._enqueue(dict(inputs), tuple(outputs), deadline, key, chunks, into_open, now)
        if self._end_of_turn:
            self._pump_at_end_of_turn()
        else:
            self._pump()
        if len(tasks) > 1:
            return await gather_chunks([t.future for t in tasks], chunks)
        task = tasks[0]
        try:
            return await task.future
        except asyncio.CancelledError:
            # The caller left: its rows, if they came as it left, go back; queued, it leaves.
            release_result(task.future)
            self._on_task_done(task)
            raise

    def _enqueue(
        self,
        inputs: dict[str, Array],
        outputs: tuple[str, ...],
        deadline: float | None,
        key: CompatKey,
        chunks: list[int],
        into_open: bool,
        now: float,
    ) -> list[Task]:
        loop = asyncio.get_running_loop()
        tag = None if self._observer is None else self._observer.on_enqueue()
        tasks = []
        start = 0
        for i, rows in enumerate(chunks):
            part = merge.slice_rows(inputs, start, start + rows) if len(chunks) > 1 else inputs
            start += rows
            task = Task(part, rows, outputs, deadline, loop.create_future(), now, tag)
            self._queue.add(task, key, i == 0 and into_open, now)
            if deadline is not None:
                task.timer = self._clock.call_at(deadline, functools.partial(self._expire, task))
            if len(chunks) > 1:  # a chunk cancelled by gather_chunks leaves its batch
                task.future.add_done_callback(functools.partial(self._on_task_done, task))
            tasks.append(task)
        return tasks

    # -- leaving the queue ------------------------------------------------------------------------
    def _expire(self, task: Task) -> None:
        task.timer = None
        if task.batch is not None and not task.future.done():
            self._remove(task)
            self.stats.expired += 1
            self._refused("expired")
            task.future.set_exception(
                DeadlineExceeded("Deadline exceeded while waiting in the batch queue")
            )

    def _on_task_done(self, task: Task, _future: object = None) -> None:
        if task.future.cancelled() and task.batch is not None:
            self.stats.cancelled += 1
            self._remove(task)

    def _remove(self, task: Task) -> None:
        self._queue.remove(task)
        self._check_idle()

    # -- dispatch ---------------------------------------------------------------------------------
    def _pump_at_end_of_turn(self) -> None:
        """Pump once the requests already runnable in this loop iteration have joined."""
        if not self._pump_scheduled:
            self._pump_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_pump)

    def _scheduled_pump(self) -> None:
        self._pump_scheduled = False
        self._pump()

    def _pump(self) -> None:
        """Send ready batches while this queue has threads and the workers have slots (and
        input room)."""
        while self.in_flight < self._threads:
            batch = self._queue.next_ready()
            if batch is None or (self._end_of_turn and self._held(batch)):
                return
            try:
                runner = self._dispatcher.pick(self.servable_key, self)
            except ServingError as exc:
                results.fail(self._queue.pop(batch), exc)
                self._check_idle()
                continue
            if runner is None:
                self._dispatcher.on_capacity(self._pump)
                return
            if not self._send(batch, runner):
                return

    def _held(self, batch: Batch) -> bool:
        """Whether the concurrency window keeps ``batch`` (open, zero timeout) a little longer
        (:mod:`gateway.batching.window`); if so, a timer pumps when it ends."""
        if batch.closed or not self._window.concurrent:
            return False
        now = self._clock.now()
        deadlines = [t.deadline for t in batch.tasks if t.deadline is not None]
        service_s = self._admission.service_s or 0.0
        send_by = min(deadlines) - service_s if deadlines else None
        present = self._queue.task_count + self._running_tasks
        until = self._window.hold_until(batch.created_at, send_by, now, present)
        if until is None:
            return False
        if self._window_timer is None:
            self._window_timer = self._clock.call_at(until, self._window_ended)
        return True

    def _window_ended(self) -> None:
        self._window_timer = None
        self._pump()

    def _send(self, batch: Batch, runner: BatchRunner) -> bool:
        """Post ``batch`` to ``runner``; False when it must wait for room in the input area (it
        stays first in the queue, and this queue is woken when a run finishes)."""
        tasks = self._drop_late(batch)
        if not tasks:
            # Every member left (cancelled, expired) before the callbacks that take each out
            # ran: the batch leaves now, or the pump would find it first again, for ever.
            if batch in self._queue.batches:
                self._queue.pop(batch)
            self._check_idle()
            return True
        try:
            future, posted = results.post(
                runner,
                tasks,
                key=self.servable_key,
                signature=self.signature,
                options=self.options,
                observer=self._observer,
                now=self._clock.now(),
            )
        except InputAreaFull:
            self._queue.hold(batch)
            self._stalled = batch
            self._dispatcher.room.wait(self, self.servable_key, self._pump)
            return False
        except ServingError as exc:  # too large for any input area: several go as two halves
            if isinstance(exc, InputTooLarge) and len(tasks) > 1:
                self._queue.split(batch)
                return True
            results.fail(self._queue.pop(batch), exc)
            self._check_idle()
            return True
        self._queue.pop(batch)
        self._check_idle()  # the room it waited for, if it did, is found
        self.stats.batches += 1
        self.stats.rows += posted.rows
        self.stats.padding_rows += posted.padded - posted.rows
        self.in_flight += 1
        self._running_tasks += len(posted.tasks)
        self._runs.add(future)
        future.add_done_callback(functools.partial(self._finish, posted))
        return True

    def _finish(self, posted: results.Posted, future: asyncio.Future[RunResult]) -> None:
        """Done-callback of a batch's run: hand each task its rows (or the error), send more."""
        self._runs.discard(future)
        self.in_flight -= 1
        self._running_tasks -= len(posted.tasks)
        if results.finish(posted, future, solo=self.options.solo):
            self._admission.record(self._clock.now() - posted.sent_at)
        self._check_idle()
        self._pump()

    def _drop_late(self, batch: Batch) -> list[Task]:
        """Take out of ``batch`` (and fail with DEADLINE_EXCEEDED) the tasks whose deadline falls
        before it could finish; the live tasks left (none: the batch has left the queue)."""
        tasks = [t for t in batch.tasks if not t.future.done()]
        finish = self._admission.finish_by(self._clock.now())
        if finish is None:
            return tasks
        late = [t for t in tasks if t.deadline is not None and t.deadline < finish]
        if not late:
            return tasks
        self.stats.expired += len(late)
        for task in late:
            self._queue.remove(task)
            self._refused("expired")
        results.fail(
            late,
            DeadlineExceeded(
                f"Deadline exceeded: a batch of {self.servable_key} takes about "
                f"{(finish - self._clock.now()) * 1000:.1f} ms, more than the time left"
            ),
        )
        return [t for t in tasks if t not in late]

    def _refused(self, reason: str) -> None:
        if self._observer is not None:
            self._observer.on_refused(reason)

    # -- lifecycle --------------------------------------------------------------------------------
    async def drain(self) -> None:
        """Refuse new requests, run every queued batch now, return once nothing is in flight."""
        self._refusal = Unavailable(f"{self.servable_key} is being unloaded; retry")
        self._queue.close_all()
        self._pump()
        if self._queue or self.in_flight:
            self._idle = asyncio.Event()
            await self._idle.wait()

    def flush(self) -> None:
        """Close every open batch so that it is sent now rather than at its timeout (draining:
        nothing new will join them)."""
        self._queue.close_all()
        self._pump()

    def fail_all(self, error: ServingError) -> None:
        """Refuse new requests and fail every queued one with ``error`` (shutdown)."""
        self._refusal = error
        for batch in list(self._queue.batches):
            results.fail(self._queue.pop(batch), error)
        self._check_idle()
        for run in list(self._runs):
            run.cancel()  # its done-callback fails the batch's tasks

    def _check_idle(self) -> None:
        """After a batch or a task left the queue: the room a batch waited for is no longer
        needed once it has left; a drain ends when nothing is queued or in flight."""
        stalled = self._stalled
        if stalled is not None and stalled not in self._queue.batches:
            self._stalled = None
            self._dispatcher.room.found(self)
        if self._idle is not None and not self._queue and not self.in_flight:
            self._idle.set()
