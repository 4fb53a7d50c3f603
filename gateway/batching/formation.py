"""Batch formation for one queue: which open batch a request joins, when a batch is ready.

A :class:`BatchQueue` holds batches oldest first. A request joins the open batch of its
compatibility group (same input names, dtypes and non-batch dims, or same ranks with
variable-length padding) when its rows fit; otherwise that batch closes and a new one opens. A batch
is *ready* when it is closed (full, or ``batch_timeout_micros`` after it opened) or at once when
the timeout is 0 (work-conserving). In unbatched (``solo``) mode every request is its own closed
batch. Nothing here awaits: futures, deadlines and dispatch are the scheduler's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from gateway.batching import merge
from gateway.batching.clock import Clock, Timer
from gateway.batching.merge import Array, CompatKey
from gateway.config.batching_options import BatchingOptions
from gateway.worker_channel.lease import Outputs


@dataclass(eq=False)
class Task:
    """One request (or one chunk of a split request) waiting for its batch to run."""

    inputs: dict[str, Array]
    size: int
    outputs: tuple[str, ...]
    deadline: float | None
    future: asyncio.Future[Outputs]
    """Resolves with the request's rows, holding one lease reference
    (:mod:`gateway.worker_channel.lease`)."""
    enqueued_at: float
    tag: object = None
    """What the queue's observer noted when the request joined (metrics, traces), or None."""
    batch: Batch | None = None
    timer: Timer | None = None


@dataclass(eq=False)
class Batch:
    key: CompatKey
    created_at: float
    tasks: list[Task] = field(default_factory=list)
    size: int = 0
    closed: bool = False
    timer: Timer | None = None


class BatchQueue:
    """The waiting batches of one (servable, signature); ``on_ready`` is called when a batch's
    timeout closes it (the scheduler then tries to send it)."""

    def __init__(
        self, options: BatchingOptions, clock: Clock, on_ready: Callable[[], None]
    ) -> None:
        self.options = options
        self.batches: list[Batch] = []
        self.task_count = 0
        """Requests (or split chunks) waiting in the queue's batches."""
        self._open: dict[CompatKey, Batch] = {}
        self._execution_size = options.execution_batch_size
        self._work_conserving = options.batch_timeout_micros == 0
        self._clock = clock
        self._on_ready = on_ready

    def __len__(self) -> int:
        return len(self.batches)

    def plan(self, key: CompatKey, size: int) -> tuple[list[int], bool]:
        """Chunk sizes for a request of ``size`` rows, and whether the first chunk joins the open
        batch of ``key``."""
        if self.options.solo or size == 0:
            return [size], False
        limit = self._execution_size
        open_batch = self._open.get(key)
        room = limit - open_batch.size if open_batch is not None else 0
        if self.options.enable_large_batch_splitting:
            return merge.split_sizes(size, room, limit), room > 0
        return [size], size <= room

    def add(self, task: Task, key: CompatKey, join_open: bool, now: float) -> None:
        """Put ``task`` in the open batch of ``key`` (``join_open``, as :meth:`plan` said) or in a
        new one; a batch that reaches the execution size closes. A task of zero rows is a closed
        batch of its own (there is nothing to merge, and nothing to pad)."""
        alone = self.options.solo or task.size == 0
        batch = self._open[key] if join_open else self._new_batch(key, now, alone)
        batch.tasks.append(task)
        batch.size += task.size
        task.batch = batch
        self.task_count += 1
        if alone or batch.size >= self._execution_size:
            self._close(batch)

    def next_ready(self) -> Batch | None:
        """The oldest batch that may be sent now."""
        if self._work_conserving:
            return self.batches[0] if self.batches else None
        for batch in self.batches:
            if batch.closed:
                return batch
        return None

    def pop(self, batch: Batch) -> list[Task]:
        """Take ``batch`` out of the queue; its live tasks, detached (their timers stop)."""
        self.batches.remove(batch)
        self._close(batch)
        self.task_count -= len(batch.tasks)
        tasks = []
        for task in batch.tasks:
            task.batch = None
            if task.timer is not None:
                task.timer.cancel()
                task.timer = None
            if not task.future.done():
                tasks.append(task)
        batch.tasks = []
        return tasks

    def remove(self, task: Task) -> None:
        """Take a still-queued ``task`` out of its batch (expired or cancelled); a batch left
        empty leaves the queue."""
        batch = task.batch
        if batch is None:
            return
        task.batch = None
        if task.timer is not None:
            task.timer.cancel()
            task.timer = None
        batch.tasks.remove(task)
        batch.size -= task.size
        self.task_count -= 1
        if not batch.tasks:
            self._close(batch)
            self.batches.remove(batch)

    def hold(self, batch: Batch) -> None:
        """Close ``batch`` where it stands (it waits for room in a worker's input area; nothing
        joins it meanwhile)."""
        self._close(batch)

    def split(self, batch: Batch) -> None:
        """Move the second half of ``batch``'s tasks (two or more) into a new closed batch right
        behind it: a batch too large for any worker's input area goes as smaller ones."""
        self._close(batch)
        half = len(batch.tasks) // 2
        rest = Batch(batch.key, batch.created_at, batch.tasks[half:], closed=True)
        batch.tasks = batch.tasks[:half]
        for task in rest.tasks:
            task.batch = rest
            rest.size += task.size
        batch.size -= rest.size
        self.batches.insert(self.batches.index(batch) + 1, rest)

    def close_all(self) -> None:
        """Close every batch, so each is ready now (drain before unload)."""
        for batch in self.batches:
            self._close(batch)

    def _new_batch(self, key: CompatKey, now: float, alone: bool) -> Batch:
        batch = Batch(key, now)
        self.batches.append(batch)
        if alone:
            return batch
        previous = self._open.get(key)
        if previous is not None:
            self._close(previous)
        self._open[key] = batch
        if self.options.batch_timeout_micros > 0:
            when = now + self.options.timeout_s
            batch.timer = self._clock.call_at(when, lambda: self._on_timeout(batch))
        return batch

    def _on_timeout(self, batch: Batch) -> None:
        batch.timer = None
        if batch in self.batches:
            self._close(batch)
            self._on_ready()

    def _close(self, batch: Batch) -> None:
        batch.closed = True
        if self._open.get(batch.key) is batch:
            del self._open[batch.key]
        if batch.timer is not None:
            batch.timer.cancel()
            batch.timer = None
