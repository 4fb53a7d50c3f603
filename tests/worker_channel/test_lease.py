"""Who holds a run's output space: one lease reference per request that receives rows.

A real channel (no worker: only its gateway-side accounting is used), the lease's own operations
directly, then through the batcher with the fake link at the one seam; the lease's counter and
the channel's ``outputs_held`` say what is still held.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from channel.shm.channel import Channel
from gateway.batching.scheduler import BatchScheduler
from gateway.config.batching_options import BatchingOptions
from gateway.errors import Internal, Unavailable
from gateway.worker_channel.lease import (
    OutputLease,
    Outputs,
    RunResult,
    gather_chunks,
    release_result,
    take,
)
from tests.support.fakes import FakeClock, FakeLink, fake_dispatcher
from tests.support.idle_loop import settle

OUT_END = 4096
"""The output range a fake run's reply closes, ``[0, OUT_END)``."""


@pytest.fixture
def channel() -> Iterator[Channel]:
    with Channel.create(index=0, input_bytes=1 << 12, output_bytes=1 << 13) as channel:
        yield channel


# -- the lease's own operations ------------------------------------------------------------------
def test_the_last_reference_hands_the_range_back_and_no_count_goes_below_zero(
    channel: Channel,
) -> None:
    lease = OutputLease(channel, OUT_END)
    assert channel.outputs_held == 1 and lease.refs == 1
    assert lease.acquire() is lease and lease.refs == 2
    lease.release()
    assert channel.outputs_held == 1  # one reference still out
    lease.release()
    assert lease.refs == 0 and channel.outputs_held == 0
    with pytest.raises(RuntimeError, match="released more often than acquired"):
        lease.release()
    with pytest.raises(RuntimeError, match="already released"):
        lease.acquire()


def test_an_empty_range_holds_nothing_and_a_closed_channel_takes_nothing_back() -> None:
    channel = Channel.create(index=0, input_bytes=1 << 12, output_bytes=1 << 13)
    first = OutputLease(channel, OUT_END)
    empty = OutputLease(channel, OUT_END)  # a run that wrote nothing: the same end
    assert channel.outputs_held == 1
    empty.release()
    assert channel.outputs_held == 1
    channel.close()
    first.release()  # the worker is gone: nothing to hand back, no error
    assert first.refs == 0


def test_a_run_shares_its_rows_one_reference_each_and_returns_its_own_once(
    channel: Channel,
) -> None:
    y = np.arange(4, dtype=np.float32).reshape(2, 2)
    run = RunResult({"y": y}, 1.0, lease=OutputLease(channel, OUT_END))
    parts = [run.share({"y": y[i : i + 1]}) for i in range(2)]
    assert run.lease is not None and run.lease.refs == 3
    run.release()
    run.release()  # once: later calls do nothing
    assert parts[0].lease is not None and parts[0].lease.refs == 2
    for part in parts:
        part.release()
        part.release()  # idempotent per holder
    assert channel.outputs_held == 0
    owned = RunResult({"y": y}, 1.0).share({"y": y})  # a fake worker's arrays: nothing held
    assert owned.lease is None and np.shares_memory(owned["y"], y)


async def test_a_cancelled_awaiter_returns_the_reference_of_what_resolved(channel: Channel) -> None:
    future: asyncio.Future[Outputs] = asyncio.get_running_loop().create_future()
    waiter = asyncio.create_task(take(future))
    await settle()
    lease = OutputLease(channel, OUT_END)
    future.set_result(Outputs({"y": np.zeros(1)}, lease))
    waiter.cancel()  # cancelled after its future resolved, before it ran
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert lease.refs == 0 and channel.outputs_held == 0
    failed: asyncio.Future[Outputs] = asyncio.get_running_loop().create_future()
    failed.set_exception(Unavailable("gone"))
    release_result(failed)  # nothing held, nothing raised
    failed.exception()


async def test_chunks_are_copied_as_they_arrive_and_a_failure_cancels_the_rest(
    channel: Channel,
) -> None:
    loop = asyncio.get_running_loop()
    futures: list[asyncio.Future[Outputs]] = [loop.create_future() for _ in range(3)]
    gathering = asyncio.create_task(gather_chunks(futures, [1, 1, 1]))
    first = OutputLease(channel, OUT_END)
    futures[0].set_result(Outputs({"y": np.ones((1, 2), np.float32)}, first))
    await settle()
    assert first.refs == 0  # copied and returned while the next chunk waits
    futures[1].set_exception(Internal("the batch failed"))
    with pytest.raises(Internal):
        await gathering
    assert futures[2].cancelled()  # the chunk still waiting leaves
    futures[1].exception()
    assert channel.outputs_held == 0


# -- through the batcher --------------------------------------------------------------------------
def _scheduler(options: BatchingOptions) -> tuple[BatchScheduler, FakeLink, FakeClock]:
    dispatcher, (link,) = fake_dispatcher(1, 1)
    clock = FakeClock()
    scheduler = BatchScheduler(
        servable_key="m:1",
        signature="serving_default",
        options=options,
        dispatcher=dispatcher,
        clock=clock,
    )
    return scheduler, link, clock


def _rows(start: int, n: int) -> np.ndarray:
    return np.arange(start * 2, (start + n) * 2, dtype=np.float32).reshape(n, 2)


def _twice(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    y = inputs["x"] * 2
    y.flags.writeable = False  # as a view on the worker's output space is
    return {"y": y}


async def test_each_request_holds_one_reference_and_padding_holds_none(channel: Channel) -> None:
    options = BatchingOptions(max_batch_size=4, allowed_batch_sizes=(4,), num_batch_threads=1)
    scheduler, link, _ = _scheduler(options)
    calls = [
        asyncio.create_task(scheduler.submit({"x": _rows(i, 1)}, ("y",), None)) for i in range(3)
    ]
    await settle()
    (batch,) = link.sent
    assert batch.inputs["x"].shape == (4, 2)  # three rows and one of padding
    lease = OutputLease(channel, OUT_END)
    outputs: dict[str, Any] = {}
    link.complete(0, lambda x: outputs.setdefault("run", _twice(x)), lease)
    results: list[Outputs] = [await call for call in calls]
    assert lease.refs == 3  # one per request; the run's own went back, padding holds none
    for i, result in enumerate(results):
        assert result.lease is lease
        assert np.shares_memory(result["y"], outputs["run"]["y"])  # views, not copies
        assert not result["y"].flags.writeable
        np.testing.assert_array_equal(result["y"], _rows(i, 1) * 2)
    results[2].release()
    results[0].release()
    assert channel.outputs_held == 1  # one request still encodes from the space
    results[0].release()  # idempotent per holder
    assert lease.refs == 1
    results[1].release()
    assert lease.refs == 0 and channel.outputs_held == 0


async def test_a_request_cancelled_as_its_rows_arrive_returns_its_reference(
    channel: Channel,
) -> None:
    options = BatchingOptions(max_batch_size=4, num_batch_threads=1)
    scheduler, link, _ = _scheduler(options)
    call = asyncio.create_task(scheduler.submit({"x": _rows(0, 1)}, ("y",), None))
    await settle()
    lease = OutputLease(channel, OUT_END)
    link.complete(0, _twice, lease)
    await asyncio.sleep(0)  # the batch's done-callback resolves the request's future...
    call.cancel()  # ...and the caller is cancelled before it can take the rows
    await settle()
    assert call.cancelled()
    assert lease.refs == 0 and channel.outputs_held == 0


async def test_requests_that_left_and_failed_runs_hold_nothing(channel: Channel) -> None:
    options = BatchingOptions(max_batch_size=4, num_batch_threads=1, batch_timeout_micros=10)
    scheduler, link, clock = _scheduler(options)
    kept = asyncio.create_task(scheduler.submit({"x": _rows(0, 1)}, ("y",), None))
    left = asyncio.create_task(scheduler.submit({"x": _rows(1, 1)}, ("y",), None))
    await settle()
    clock.advance(1.0)
    await settle()
    left.cancel()  # in flight: its rows come back, but nobody takes them
    await settle()
    lease = OutputLease(channel, OUT_END)
    link.complete(0, _twice, lease)
    result = await kept
    assert lease.refs == 1
    result.release()
    assert channel.outputs_held == 0
    # A run whose outputs cannot be split (no batch dimension) fails every member.
    failing = asyncio.create_task(scheduler.submit({"x": _rows(0, 2)}, ("y",), None))
    await settle()
    clock.advance(1.0)
    await settle()
    broken = OutputLease(channel, OUT_END * 2)
    link.complete(1, lambda x: {"y": np.float32(1.0) + np.zeros(())}, broken)
    with pytest.raises(Internal):
        await failing
    assert broken.refs == 0 and channel.outputs_held == 0


async def test_a_split_request_gets_a_copy_and_its_chunks_return_their_references(
    channel: Channel,
) -> None:
    options = BatchingOptions(
        max_batch_size=4,
        max_execution_batch_size=2,
        enable_large_batch_splitting=True,
        num_batch_threads=2,
    )
    dispatcher, (link,) = fake_dispatcher(1, 2)
    scheduler = BatchScheduler(
        servable_key="m:1",
        signature="serving_default",
        options=options,
        dispatcher=dispatcher,
        clock=FakeClock(),
    )
    call = asyncio.create_task(scheduler.submit({"x": _rows(0, 3)}, ("y",), None))
    await settle()
    assert len(link.sent) == 2
    leases = [OutputLease(channel, OUT_END), OutputLease(channel, OUT_END * 2)]
    link.complete(0, _twice, leases[0])
    await settle()
    # The first chunk is copied and returned while the second waits: held, it could keep
    # the worker from writing the second one.
    assert leases[0].refs == 0 and channel.outputs_held == 1
    link.complete(1, _twice, leases[1])
    result = await call
    np.testing.assert_array_equal(result["y"], _rows(0, 3) * 2)
    assert result.lease is None  # reassembled: owned
    assert [lease.refs for lease in leases] == [0, 0] and channel.outputs_held == 0
