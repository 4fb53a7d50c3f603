"""The deadline-aware dynamic batcher: one :class:`BatchScheduler` per (servable, signature).

Contract (see :class:`~gateway.config.batching_options.BatchingOptions` for each option):

- A request joins the open batch of its compatibility group (same input names, dtypes and non-batch
  dims, or same ranks with variable-length padding) when its rows fit; otherwise that batch closes
  and a new one opens. A batch is *ready* when full, when ``batch_timeout_micros`` has passed since
  it opened, or at once when the timeout is 0 (work-conserving). Ready batches go, oldest first, as
  soon as a worker slot is free and fewer than ``num_batch_threads`` of this queue are in flight.
- Refusals are immediate and never block: a request larger than ``max_batch_size`` →
  INVALID_ARGUMENT (unless splitting is on, which cuts it across batches and reassembles its
  outputs); a request that would need more than ``max_enqueued_batches`` waiting batches →
  UNAVAILABLE.
- An expired request (its deadline timer fires) or a cancelled one leaves its batch before the batch
  runs and never takes a slot; a batch left empty is not run. Once batches have been timed (an
  average of dispatch-to-completion seconds), a request is refused at once with UNAVAILABLE when
  the batches ahead of it would keep it past its deadline, and a request whose deadline falls
  before its batch could finish is dropped with DEADLINE_EXCEEDED instead of being computed for
  nobody: under overload the excess is rejected, not timed out. Every request gets exactly its own
  rows back, each with its own output selection; padding rows are never returned.
- Every failure resolves every waiting future (only ``if not fut.done()``).

Time comes from an injectable :class:`Clock` so tests drive timeouts deterministically.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gateway.batching import merge
from gateway.batching.merge import Array, CompatKey
from gateway.config.batching_options import BatchingOptions
from gateway.errors import (
    DeadlineExceeded,
    Internal,
    InvalidArgument,
    ServingError,
    Unavailable,
)
from gateway.parallel.dispatcher import Dispatcher, RunResult, WorkerLink

QUEUE_FULL = "The batch scheduling queue to which this task was submitted is full"
SERVICE_TIME_WEIGHT = 0.2
"""Weight of the newest batch in the moving average of batch service time."""


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic seconds and one-shot timers (``time.monotonic()`` scale, as deadlines are)."""

    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer: ...


class LoopClock:
    """The real clock: ``time.monotonic()`` and the running loop's timers."""

    def now(self) -> float:
        return time.monotonic()

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        delay = max(0.0, when - time.monotonic())
        return asyncio.get_running_loop().call_later(delay, callback)


class BatchObserver(Protocol):
    """Receives what metrics need, once per batch sent to a worker."""

    def on_batch(self, rows: int, padded_rows: int, queue_waits_s: Sequence[float]) -> None: ...


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


@dataclass(eq=False)
class _Task:
    inputs: dict[str, Array]
    size: int
    outputs: tuple[str, ...]
    deadline: float | None
    future: asyncio.Future[dict[str, Array]]
    enqueued_at: float
    batch: _Batch | None = None
    timer: Timer | None = None


@dataclass(eq=False)
class _Batch:
    key: CompatKey
    created_at: float
    tasks: list[_Task] = field(default_factory=list)
    size: int = 0
    closed: bool = False
    timer: Timer | None = None


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
        self._dispatcher = dispatcher
        self._clock = clock or LoopClock()
        self._observer = observer
        self._queue: list[_Batch] = []
        self._open: dict[CompatKey, _Batch] = {}
        self._threads = max(1, options.num_batch_threads)
        self._runs: set[asyncio.Future[RunResult]] = set()
        self._idle: asyncio.Event | None = None
        self._refusal: ServingError | None = None
        self.service_s: float | None = None
        """Moving average of a batch's dispatch-to-completion time (seconds); None until timed."""

    # -- observation ------------------------------------------------------------------------------
    @property
    def queued_tasks(self) -> int:
        """Requests (or split chunks) waiting in this queue right now."""
        return sum(len(b.tasks) for b in self._queue)

    @property
    def queued_batches(self) -> int:
        return len(self._queue)

    # -- submission -------------------------------------------------------------------------------
    async def submit(
        self, inputs: Mapping[str, Array], outputs: Sequence[str], deadline: float | None
    ) -> dict[str, Array]:
        """Queue one validated request; its own rows of ``outputs`` once its batch has run."""
        if self._refusal is not None:
            raise self._refusal
        now = self._clock.now()
        if deadline is not None and now >= deadline:
            raise DeadlineExceeded("Deadline exceeded before the request was queued")
        options = self.options
        key: CompatKey
        if options.solo:
            size, key = _solo_size(inputs), ()
            chunks, into_open = [size], False
        else:
            size = merge.request_size(inputs)
            if size > options.max_batch_size:
                raise InvalidArgument(
                    f"Task size {size} is larger than maximum input batch size "
                    f"{options.max_batch_size}"
                )
            key = merge.compat_key(inputs, pad_variable_length=options.pad_variable_length_inputs)
            chunks, into_open = self._plan(key, size)
        new_batches = len(chunks) - (1 if into_open else 0)
        if len(self._queue) + new_batches > options.max_enqueued_batches:
            self.stats.rejected_full += 1
            if options.solo:
                raise Unavailable(
                    f"{options.max_enqueued_batches} requests are already waiting for a worker; "
                    "retry later"
                )
            raise Unavailable(QUEUE_FULL)
        if deadline is not None and self.service_s is not None:
            ahead = len(self._queue) + self.in_flight - (1 if into_open else 0)
            waves = ahead // self._threads + 1
            wait_s = waves * self.service_s
            if now + wait_s > deadline:
                self.stats.rejected_late += 1
                raise Unavailable(
                    f"the queue of {self.servable_key} would hold this request about "
                    f"{wait_s * 1000:.0f} ms, past its deadline; retry later"
                )
        tasks = self._enqueue(dict(inputs), tuple(outputs), deadline, key, chunks, into_open, now)
        self._pump()
        if len(tasks) == 1:
            return await tasks[0].future
        return await _gather_chunks([t.future for t in tasks])

    def _plan(self, key: CompatKey, size: int) -> tuple[list[int], bool]:
        """Chunk sizes for a request, and whether the first chunk joins the open batch."""
        limit = self.options.execution_batch_size
        open_batch = self._open.get(key)
        room = limit - open_batch.size if open_batch is not None else 0
        if self.options.enable_large_batch_splitting:
            chunks = merge.split_sizes(size, room, limit)
            return chunks, room > 0
        return [size], size <= room

    def _enqueue(
        self,
        inputs: dict[str, Array],
        outputs: tuple[str, ...],
        deadline: float | None,
        key: CompatKey,
        chunks: list[int],
        into_open: bool,
        now: float,
    ) -> list[_Task]:
        loop = asyncio.get_running_loop()
        tasks = []
        start = 0
        for i, rows in enumerate(chunks):
            part = merge.slice_rows(inputs, start, start + rows) if len(chunks) > 1 else inputs
            start += rows
            task = _Task(part, rows, outputs, deadline, loop.create_future(), now)
            batch = self._open[key] if (i == 0 and into_open) else self._new_batch(key, now)
            batch.tasks.append(task)
            batch.size += rows
            task.batch = batch
            if self.options.solo or batch.size >= self.options.execution_batch_size:
                self._close(batch)
            if deadline is not None:
                task.timer = self._clock.call_at(deadline, functools.partial(self._expire, task))
            task.future.add_done_callback(functools.partial(self._on_task_done, task))
            tasks.append(task)
        return tasks

    def _new_batch(self, key: CompatKey, now: float) -> _Batch:
        previous = self._open.get(key)
        if previous is not None:
            self._close(previous)
        batch = _Batch(key, now)
        self._queue.append(batch)
        if not self.options.solo:
            self._open[key] = batch
            if self.options.batch_timeout_micros > 0:
                when = now + self.options.timeout_s
                batch.timer = self._clock.call_at(when, lambda: self._on_timeout(batch))
        return batch

    def _close(self, batch: _Batch) -> None:
        batch.closed = True
        if self._open.get(batch.key) is batch:
            del self._open[batch.key]
        if batch.timer is not None:
            batch.timer.cancel()
            batch.timer = None

    # -- leaving the queue ------------------------------------------------------------------------
    def _on_timeout(self, batch: _Batch) -> None:
        batch.timer = None
        if batch in self._queue:
            self._close(batch)
            self._pump()

    def _expire(self, task: _Task) -> None:
        task.timer = None
        if task.batch is not None and not task.future.done():
            self._remove(task)
            self.stats.expired += 1
            task.future.set_exception(
                DeadlineExceeded("Deadline exceeded while waiting in the batch queue")
            )

    def _on_task_done(self, task: _Task, _future: object = None) -> None:
        if task.future.cancelled() and task.batch is not None:
            self.stats.cancelled += 1
            self._remove(task)

    def _remove(self, task: _Task) -> None:
        batch = task.batch
        if batch is None:
            return
        task.batch = None
        if task.timer is not None:
            task.timer.cancel()
            task.timer = None
        batch.tasks.remove(task)
        batch.size -= task.size
        if not batch.tasks:
            self._close(batch)
            self._queue.remove(batch)
            self._check_idle()

    # -- dispatch ---------------------------------------------------------------------------------
    def _pump(self) -> None:
        """Send ready batches while this queue has threads and the workers have slots."""
        while self.in_flight < self._threads:
            batch = next(
                (b for b in self._queue if b.closed or self.options.batch_timeout_micros == 0),
                None,
            )
            if batch is None:
                return
            try:
                link = self._dispatcher.pick(self.servable_key)
            except ServingError as exc:
                self._queue.remove(batch)
                self._close(batch)
                self._fail(self._take_tasks(batch), exc)
                self._check_idle()
                continue
            if link is None:
                self._dispatcher.on_capacity(self._pump)
                return
            self._queue.remove(batch)
            self._close(batch)
            self._send(batch, link)

    def _send(self, batch: _Batch, link: WorkerLink) -> None:
        tasks = self._drop_late(self._take_tasks(batch))
        if not tasks:
            self._check_idle()
            return
        rows = sum(t.size for t in tasks)
        solo = self.options.solo
        padded = rows if solo else merge.padded_size(rows, self.options.allowed_batch_sizes)
        parts = [t.inputs for t in tasks]
        if solo:
            layout = {n: (a.dtype, tuple(a.shape)) for n, a in parts[0].items()}
        else:
            layout = merge.batch_layout(parts, padded)
        outputs = list(dict.fromkeys(name for t in tasks for name in t.outputs))
        deadlines = [t.deadline for t in tasks]
        deadline = None if None in deadlines else max(d for d in deadlines if d is not None)
        try:
            future = link.submit(
                self.servable_key,
                layout,
                lambda name, dest: merge.fill_rows(name, dest, parts),
                outputs,
                deadline,
                self.signature,
            )
        except ServingError as exc:
            self._fail(tasks, exc)
            self._check_idle()
            return
        now = self._clock.now()
        self.stats.batches += 1
        self.stats.rows += rows
        self.stats.padding_rows += padded - rows
        if self._observer is not None:
            self._observer.on_batch(rows, padded, [now - t.enqueued_at for t in tasks])
        self.in_flight += 1
        self._runs.add(future)
        future.add_done_callback(functools.partial(self._finish, tasks, padded, now))

    def _take_tasks(self, batch: _Batch) -> list[_Task]:
        """Detach the live tasks of a batch leaving the queue (their timers stop)."""
        tasks = [t for t in batch.tasks if not t.future.done()]
        for task in batch.tasks:
            task.batch = None
            if task.timer is not None:
                task.timer.cancel()
                task.timer = None
        batch.tasks = []
        return tasks

    def _finish(
        self, tasks: list[_Task], padded: int, sent_at: float, future: asyncio.Future[RunResult]
    ) -> None:
        """Done-callback of a batch's run: hand each task its rows (or the error), send more."""
        self._runs.discard(future)
        self.in_flight -= 1
        try:
            if future.cancelled():
                raise Unavailable("the server is shutting down")
            error = future.exception()
            if error is not None:
                raise error
            outputs = future.result().outputs
            self._time_batch(self._clock.now() - sent_at)
            if self.options.solo:
                per_task = [outputs]
            else:
                per_task = merge.split_outputs(outputs, [t.size for t in tasks], padded)
        except ServingError as exc:
            self._fail(tasks, exc)
        except Exception as exc:
            self._fail(tasks, Internal(f"{type(exc).__name__}: {exc}"))
        else:
            for task, outs in zip(tasks, per_task, strict=True):
                if not task.future.done():
                    task.future.set_result({name: outs[name] for name in task.outputs})
        self._check_idle()
        self._pump()

    def _drop_late(self, tasks: list[_Task]) -> list[_Task]:
        """Fail, with DEADLINE_EXCEEDED, tasks whose deadline falls before a batch could finish."""
        if self.service_s is None:
            return tasks
        finish = self._clock.now() + self.service_s
        late = [t for t in tasks if t.deadline is not None and t.deadline < finish]
        if not late:
            return tasks
        self.stats.expired += len(late)
        self._fail(
            late,
            DeadlineExceeded(
                f"Deadline exceeded: a batch of {self.servable_key} takes about "
                f"{self.service_s * 1000:.1f} ms, more than the time left"
            ),
        )
        return [t for t in tasks if t not in late]

    def _time_batch(self, seconds: float) -> None:
        """Fold one batch's dispatch-to-completion time into :attr:`service_s`."""
        if self.service_s is None:
            self.service_s = seconds
        else:
            self.service_s += SERVICE_TIME_WEIGHT * (seconds - self.service_s)

    @staticmethod
    def _fail(tasks: Sequence[_Task], error: ServingError) -> None:
        for task in tasks:
            if not task.future.done():
                task.future.set_exception(error)

    # -- lifecycle --------------------------------------------------------------------------------
    async def drain(self) -> None:
        """Refuse new requests, run every queued batch now, return once nothing is in flight."""
        self._refusal = Unavailable(f"{self.servable_key} is being unloaded; retry")
        for batch in list(self._queue):
            self._close(batch)
        self._pump()
        if self._queue or self.in_flight:
            self._idle = asyncio.Event()
            await self._idle.wait()

    def fail_all(self, error: ServingError) -> None:
        """Refuse new requests and fail every queued one with ``error`` (shutdown)."""
        self._refusal = error
        for batch in list(self._queue):
            self._queue.remove(batch)
            self._close(batch)
            self._fail(self._take_tasks(batch), error)
        for run in list(self._runs):
            run.cancel()  # its done-callback fails the batch's tasks

    def _check_idle(self) -> None:
        if self._idle is not None and not self._queue and not self.in_flight:
            self._idle.set()


def _solo_size(inputs: Mapping[str, Array]) -> int:
    """Rows of an unbatched request (1 for scalar-only inputs); only used for statistics."""
    for array in inputs.values():
        if array.ndim:
            return int(array.shape[0])
    return 1


async def _gather_chunks(futures: list[asyncio.Future[dict[str, Array]]]) -> dict[str, Array]:
    """Await a split request's chunks in order; on any failure cancel the rest (they leave)."""
    results = []
    try:
        for future in futures:
            results.append(await future)
    except BaseException:
        for future in futures:
            if not future.done():
                future.cancel()
        raise
    return merge.concat_outputs(results)
