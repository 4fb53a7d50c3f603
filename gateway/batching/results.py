"""A batch's run and its results: the batch posted to the runner the scheduler picked, then each
request handed its own rows, or the run's error.

:func:`post` lays the batch out (the members' rows merged and padded to an allowed size, or one
request alone in unbatched mode), lets the queue's observer note the batch (its trace context
travels with the run) and posts it to the runner (:class:`~gateway.runs.batch_runner.BatchRunner`:
a worker's run link). :func:`finish` resolves every member still waiting: each gets its own rows of
its own outputs as views sharing the run's lease (:meth:`RunResult.share
<gateway.worker_channel.lease.RunResult.share>`), then the run's own reference goes back; padding
rows and members that left hold none. Every failure resolves every member, only ``if not
fut.done()``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import NamedTuple

from gateway.batching import merge
from gateway.batching.formation import Task
from gateway.batching.observer import BatchObserver, BatchRecord
from gateway.config.batching_options import BatchingOptions
from gateway.errors import Internal, ServingError, Unavailable
from gateway.runs.batch_runner import BatchRunner
from gateway.worker_channel.lease import RunResult


class Posted(NamedTuple):
    """A batch whose run is in flight: its live members, their rows, the rows with padding,
    when it was posted (the scheduler's clock) and the observer's record of it."""

    tasks: list[Task]
    rows: int
    padded: int
    sent_at: float
    record: BatchRecord | None


def post(
    runner: BatchRunner,
    tasks: list[Task],
    *,
    key: str,
    signature: str,
    options: BatchingOptions,
    observer: BatchObserver | None,
    now: float,
) -> tuple[asyncio.Future[RunResult], Posted]:
    """Post ``tasks`` (live, at least one) as one run of ``key`` to ``runner``.

    The run's deadline is the latest member's (none when a member has none); its outputs, the
    union of the members'. Raises the runner's ServingError when the run cannot be posted (the
    observer's record is then done without a result; the tasks are left as they were).
    """
    rows = 0
    outputs: dict[str, None] = {}
    deadline: float | None = 0.0
    parts = []
    for task in tasks:  # one pass, no generator per batch
        rows += task.size
        outputs.update(dict.fromkeys(task.outputs))
        if deadline is not None:
            deadline = None if task.deadline is None else max(deadline, task.deadline)
        parts.append(task.inputs)
    solo = options.solo
    padded = rows if solo else merge.padded_size(rows, options.allowed_batch_sizes)
    if solo:
        layout = {n: (a.dtype, a.shape) for n, a in parts[0].items()}
    else:
        layout = merge.batch_layout(parts, padded)
    runner.check_room(layout)  # before the observer counts a batch that must wait for room
    record = None
    if observer is not None:
        tags = [t.tag for t in tasks]
        if observer.sees_untagged or tags.count(None) < len(tags):
            waits = [now - t.enqueued_at for t in tasks]
            sizes = [t.size for t in tasks]
            record = observer.on_batch(tags, waits, sizes, padded)
    try:
        future = runner.submit(
            key,
            layout,
            functools.partial(merge.fill_rows, parts=parts),
            tuple(outputs),
            deadline,
            signature,
            trace=None if record is None else record.trace,
        )
    except ServingError:
        if record is not None:
            record.done(None)
        raise
    return future, tuple.__new__(Posted, (tasks, rows, padded, now, record))


def finish(posted: Posted, future: asyncio.Future[RunResult], *, solo: bool) -> bool:
    """Resolve every member still waiting from the run's ``future`` (done): its rows, or the
    run's error (UNAVAILABLE when the run was cancelled: shutdown). True when the run itself
    succeeded (its time then counts as a batch's service time), even if its outputs could not
    be handed out."""
    succeeded = not future.cancelled() and future.exception() is None
    if posted.record is not None:
        posted.record.done(future.result() if succeeded else None)
    try:
        if future.cancelled():
            raise Unavailable("the server is shutting down")
        error = future.exception()
        if error is not None:
            raise error
        hand_out(posted.tasks, future.result(), posted.padded, solo=solo)
    except ServingError as exc:
        fail(posted.tasks, exc)
    except Exception as exc:
        fail(posted.tasks, Internal(f"{type(exc).__name__}: {exc}"))
    return succeeded


def hand_out(tasks: Sequence[Task], run: RunResult, padded: int, *, solo: bool) -> None:
    """Give each task still waiting its rows of ``run`` (views), each with one lease reference,
    then return the run's own reference: padding rows and tasks that left hold none. Internal
    (from :func:`merge.split_outputs`) when the outputs lost the batch dimension."""
    try:
        if solo:
            per_task = [run.outputs]
        else:
            per_task = merge.split_outputs(run.outputs, [t.size for t in tasks], padded)
        for task, outs in zip(tasks, per_task, strict=True):
            if not task.future.done():
                task.future.set_result(run.share({name: outs[name] for name in task.outputs}))
    finally:
        run.release()


def fail(tasks: Sequence[Task], error: ServingError) -> None:
    """Fail every task still waiting with ``error``."""
    for task in tasks:
        if not task.future.done():
            task.future.set_exception(error)
