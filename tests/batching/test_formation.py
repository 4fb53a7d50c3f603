"""Batch formation, without dispatch: joining, closing on size and timeout, removal."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest

from gateway.batching.formation import BatchQueue, Task
from gateway.batching.merge import CompatKey
from gateway.config.batching_options import BatchingOptions
from tests.support.fakes import FakeClock


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def task(loop: asyncio.AbstractEventLoop, rows: int) -> Task:
    inputs = {"x": np.zeros((rows, 2), np.float32)}
    return Task(inputs, rows, ("y",), None, loop.create_future(), 0.0)


def _key(name: str) -> CompatKey:
    """A compatibility key (the queue only compares keys: equal ones may share a batch)."""
    return ((name, "float32", (2,)),)


K, A, B = _key("k"), _key("a"), _key("b")


def make(options: BatchingOptions) -> tuple[BatchQueue, FakeClock, list[int]]:
    clock, ready = FakeClock(), []
    return BatchQueue(options, clock, lambda: ready.append(1)), clock, ready


def test_requests_join_the_open_batch_until_it_is_full(loop: asyncio.AbstractEventLoop) -> None:
    queue, _, _ = make(BatchingOptions(max_batch_size=4, batch_timeout_micros=1000))
    for rows in (1, 1):
        chunks, join = queue.plan(K, rows)
        queue.add(task(loop, rows), K, join, 0.0)
    assert len(queue) == 1 and queue.task_count == 2
    assert queue.next_ready() is None  # open, and the timeout has not passed
    chunks, join = queue.plan(K, 1)
    assert (chunks, join) == ([1], True)
    queue.add(task(loop, 1), K, join, 0.0)
    assert queue.next_ready() is None
    _, join = queue.plan(K, 1)
    queue.add(task(loop, 1), K, join, 0.0)  # 4 rows: full, so closed and ready
    assert queue.next_ready() is queue.batches[0]


def test_a_request_that_does_not_fit_opens_a_new_batch(loop: asyncio.AbstractEventLoop) -> None:
    queue, _, _ = make(BatchingOptions(max_batch_size=4, batch_timeout_micros=1000))
    queue.add(task(loop, 3), K, queue.plan(K, 3)[1], 0.0)
    assert queue.plan(K, 2) == ([2], False)
    queue.add(task(loop, 2), K, False, 0.0)
    assert len(queue) == 2
    assert queue.batches[0].closed and not queue.batches[1].closed


def test_incompatible_requests_never_share_a_batch(loop: asyncio.AbstractEventLoop) -> None:
    queue, _, _ = make(BatchingOptions(max_batch_size=8, batch_timeout_micros=1000))
    queue.add(task(loop, 1), A, queue.plan(A, 1)[1], 0.0)
    assert queue.plan(B, 1) == ([1], False)


def test_splitting_fills_the_open_batch_first(loop: asyncio.AbstractEventLoop) -> None:
    options = BatchingOptions(
        max_batch_size=8,
        enable_large_batch_splitting=True,
        max_execution_batch_size=4,
        batch_timeout_micros=1000,
    )
    queue, _, _ = make(options)
    queue.add(task(loop, 3), K, False, 0.0)
    assert queue.plan(K, 7) == ([1, 4, 2], True)


def test_timeout_closes_the_batch_and_says_so(loop: asyncio.AbstractEventLoop) -> None:
    queue, clock, ready = make(BatchingOptions(max_batch_size=8, batch_timeout_micros=2000))
    queue.add(task(loop, 1), K, False, clock.now())
    clock.advance(0.0019)
    assert queue.next_ready() is None and not ready
    clock.advance(0.0001)
    assert ready == [1] and queue.next_ready() is queue.batches[0]


def test_zero_timeout_is_work_conserving(loop: asyncio.AbstractEventLoop) -> None:
    queue, _, _ = make(BatchingOptions(max_batch_size=8, batch_timeout_micros=0))
    queue.add(task(loop, 1), K, False, 0.0)
    assert queue.next_ready() is queue.batches[0]


def test_removing_the_last_task_drops_the_batch(loop: asyncio.AbstractEventLoop) -> None:
    queue, _, _ = make(BatchingOptions(max_batch_size=8, batch_timeout_micros=1000))
    first, second = task(loop, 1), task(loop, 2)
    queue.add(first, K, False, 0.0)
    queue.add(second, K, True, 0.0)
    queue.remove(first)
    assert queue.task_count == 1 and queue.batches[0].size == 2
    queue.remove(second)
    assert len(queue) == 0
    assert queue.plan(K, 1) == ([1], False)  # the emptied batch no longer takes requests


def test_pop_returns_only_live_tasks_and_detaches_them(loop: asyncio.AbstractEventLoop) -> None:
    queue, _, _ = make(BatchingOptions(max_batch_size=8, batch_timeout_micros=1000))
    done, live = task(loop, 1), task(loop, 1)
    queue.add(done, K, False, 0.0)
    queue.add(live, K, True, 0.0)
    done.future.cancel()
    assert queue.pop(queue.batches[0]) == [live]
    assert live.batch is None and len(queue) == 0


def test_unbatched_mode_makes_every_request_its_own_ready_batch(
    loop: asyncio.AbstractEventLoop,
) -> None:
    queue, _, _ = make(BatchingOptions.unbatched())
    for _ in range(2):
        chunks, join = queue.plan((), 5)
        assert (chunks, join) == ([5], False)
        queue.add(task(loop, 5), (), join, 0.0)
    assert len(queue) == 2 and all(b.closed for b in queue.batches)
