"""A request that fits a worker's input area waits for room there, first come
first served, within its deadline; only one that could never fit is refused.

The real run side — a :class:`Dispatcher` with the real run link over a real channel — and the
worker's end played by the test (:class:`WorkerEnd`); the clock is injected. The input area
holds 64 KiB: one 40 KiB request at a time, though the worker takes two runs at once and each
queue sends two.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import numpy as np
import pytest

from channel.messages import RunRequest
from channel.shm.channel import Channel
from gateway.batching.scheduler import BatchScheduler
from gateway.config.batching_options import BatchingOptions
from gateway.errors import DeadlineExceeded, ResourceExhausted, Unavailable
from gateway.runs.dispatcher import Dispatcher
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.lease import Outputs
from tests.support.fakes import FakeClock
from tests.support.idle_loop import settle
from tests.support.worker_end import WorkerEnd

INPUT_BYTES = 1 << 16
BIG = 10 * 1024  # float32 elements: 40 KiB
WAIT_S = 30.0


class Side:
    """One worker's channel behind a dispatcher, and a scheduler per servable on it."""

    def __init__(self, channel: Channel, loop: asyncio.AbstractEventLoop) -> None:
        self.worker = WorkerEnd(channel)
        self.endpoint = Endpoint(0, channel, loop)
        self.endpoint.open()
        self.dispatcher = Dispatcher(max_in_flight=2)
        self.dispatcher.attach(self.endpoint)
        self.clock = FakeClock()
        self.posted: list[float] = []
        """The first input value of each run the worker computed, in order."""
        self._backlog: list[RunRequest] = []

    def scheduler(self, key: str, options: BatchingOptions | None = None) -> BatchScheduler:
        self.dispatcher.route(0, key)
        return BatchScheduler(
            servable_key=key,
            signature="serving_default",
            options=options
            or dataclasses.replace(BatchingOptions.unbatched(), num_batch_threads=2),
            dispatcher=self.dispatcher,
            clock=self.clock,
        )

    def posted_runs(self) -> int:
        """Runs posted to the worker and not answered yet."""
        self._backlog += [r for r in self.worker.requests() if isinstance(r, RunRequest)]
        return len(self._backlog)

    def answer(self) -> int:
        """Answer the oldest run posted (y = the first column of x), as a worker computes one run
        at a time; how many were waiting."""
        waiting = self.posted_runs()
        if waiting:
            run = self._backlog.pop(0)
            x = self.worker.inputs(run)["x"]
            self.posted.append(float(x[0, 0]))
            self.worker.post(self.worker.run_reply(run, {"y": x[:, :1].copy()}))
        return waiting


@pytest.fixture
async def side() -> AsyncIterator[Side]:
    """A worker's channel (a 64 KiB input area) behind a dispatcher, on the test's loop."""
    channel = Channel.create(index=0, input_bytes=INPUT_BYTES, output_bytes=1 << 16)
    side = Side(channel, asyncio.get_running_loop())
    try:
        yield side
    finally:
        side.endpoint.close(Unavailable("test over"))


def _send(
    scheduler: BatchScheduler, value: float, elements: int, deadline: float | None = None
) -> asyncio.Task[float]:
    async def call() -> float:
        outputs: Outputs = await scheduler.submit(
            {"x": np.full((1, elements), value, np.float32)}, ("y",), deadline
        )
        try:
            return float(outputs["y"][0, 0])
        finally:
            outputs.release()

    return asyncio.create_task(call())


async def _answer_until_done(side: Side, *calls: asyncio.Task[float]) -> None:
    async with asyncio.timeout(WAIT_S):
        while not all(c.done() for c in calls):
            side.answer()
            await settle()


async def test_requests_that_fit_one_at_a_time_wait_for_room_instead_of_being_refused(
    side: Side,
) -> None:
    scheduler = side.scheduler("m:1")
    calls = [_send(scheduler, float(i), BIG) for i in range(4)]
    await settle()
    assert [c.exception() for c in calls if c.done()] == []  # none refused: they wait
    assert side.posted_runs() == 1  # one in the area at a time
    await _answer_until_done(side, *calls)
    assert [c.result() for c in calls] == [0.0, 1.0, 2.0, 3.0]  # none refused, in order
    assert side.posted == [0.0, 1.0, 2.0, 3.0]


async def test_a_request_larger_than_the_whole_input_area_is_refused_at_once(side: Side) -> None:
    scheduler = side.scheduler("m:1")
    call = _send(scheduler, 1.0, INPUT_BYTES // 4 + 1)
    await settle()
    with pytest.raises(ResourceExhausted) as info:
        await call
    assert info.value.message == (
        "the batch needs 65600 bytes, more than worker 0's whole shared-memory input area "
        "of 65536 bytes (raise --worker_arena_mb)"
    )
    assert side.posted_runs() == 0


async def test_a_request_waiting_for_room_ends_at_its_deadline(side: Side) -> None:
    scheduler = side.scheduler("m:1")
    first = _send(scheduler, 1.0, BIG)
    late = _send(scheduler, 2.0, BIG, deadline=side.clock.now() + 0.5)
    await settle()
    side.clock.advance(0.6)
    with pytest.raises(DeadlineExceeded, match="while waiting in the batch queue"):
        await late
    await _answer_until_done(side, first)
    assert side.posted == [1.0] and first.result() == 1.0


async def test_a_large_request_waiting_for_room_is_not_overtaken_by_small_ones(side: Side) -> None:
    """First come, first served across servables on one worker: a small run that would fit
    waits behind a large one that waits for room, so a stream of small runs cannot starve it."""

    large = side.scheduler("large:1")
    small = side.scheduler("small:1")
    first = _send(large, 1.0, BIG)
    second = _send(large, 2.0, BIG)
    await settle()
    tiny = _send(small, 3.0, 4)
    await settle()
    assert side.posted_runs() == 1  # the tiny one did not go past the large one
    side.answer()
    await settle()
    assert side.posted_runs() == 2  # the second large one, then the tiny one
    await _answer_until_done(side, first, second, tiny)
    assert side.posted == [1.0, 2.0, 3.0]


async def test_a_batch_larger_than_the_input_area_goes_as_smaller_batches(side: Side) -> None:
    """Two requests that fit alone but not together: their batch is split, not refused."""

    options = BatchingOptions(max_batch_size=4, batch_timeout_micros=1000, num_batch_threads=2)
    scheduler = side.scheduler("m:1", options)
    calls = [_send(scheduler, float(i), BIG) for i in range(2)]
    await settle()
    side.clock.advance(0.002)  # the batch of both closes: 80 KiB
    await settle()
    assert [c.exception() for c in calls if c.done()] == []
    await _answer_until_done(side, *calls)
    assert [c.result() for c in calls] == [0.0, 1.0] and side.posted == [0.0, 1.0]
