"""The batch scheduler's observer seam: what metrics and traces see of requests and batches."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from gateway.batching.scheduler import BatchScheduler
from gateway.config.batching_options import BatchingOptions
from gateway.errors import Internal, Unavailable
from gateway.worker_channel.lease import RunResult
from tests.support.fakes import FakeClock, fake_dispatcher
from tests.support.idle_loop import settle


@dataclass
class Record:
    trace: tuple[int, int] | None
    tags: list[object]
    waits: list[float]
    sizes: list[int]
    padded: int
    results: list[RunResult | None] = field(default_factory=list)

    def done(self, result: RunResult | None) -> None:
        self.results.append(result)


@dataclass
class Observer:
    """Tags each request with a number and gives each batch a trace context."""

    numbers: itertools.count[int] = field(default_factory=itertools.count)
    batches: list[Record] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    sees_untagged: bool = True
    untagged: frozenset[int] = frozenset()
    """The requests (by number) tagged None."""

    def on_enqueue(self) -> object:
        number = next(self.numbers)
        return None if number in self.untagged else number

    def on_batch(
        self,
        tags: Sequence[object],
        queue_waits_s: Sequence[float],
        sizes: Sequence[int],
        padded: int,
    ) -> Record:
        record = Record(
            (7, len(self.batches) + 1), list(tags), list(queue_waits_s), list(sizes), padded
        )
        self.batches.append(record)
        return record

    def on_refused(self, reason: str) -> None:
        self.refused.append(reason)

    def alone(self, tag: object) -> bool:
        return False  # every call is recorded by on_batch

    def on_alone(self, tag: object, rows: int, compute_s: float | None) -> None:
        raise AssertionError("not called: alone() is False")


def _scheduler(
    options: BatchingOptions, observer: Observer
) -> tuple[BatchScheduler, FakeClock, object]:
    dispatcher, (link,) = fake_dispatcher()
    clock = FakeClock()
    scheduler = BatchScheduler(
        servable_key="m:1",
        signature="serving_default",
        options=options,
        dispatcher=dispatcher,
        clock=clock,
        observer=observer,
    )
    return scheduler, clock, link


async def test_observer_sees_members_waits_sizes_padding_and_the_run_and_sends_its_trace() -> None:
    observer = Observer()
    options = BatchingOptions(
        max_batch_size=4,
        batch_timeout_micros=1000,
        num_batch_threads=1,
        allowed_batch_sizes=(4,),
    )
    scheduler, clock, link = _scheduler(options, observer)
    x = np.ones((1, 3), np.float32)
    first = asyncio.create_task(scheduler.submit({"x": x}, ("x",), None))
    await settle()
    clock.advance(0.0004)
    second = asyncio.create_task(scheduler.submit({"x": np.ones((2, 3), np.float32)}, ("x",), None))
    await settle()
    clock.advance(0.0007)  # the batch's timeout (1 ms after its first request) fires
    await settle()
    (record,) = observer.batches
    assert record.tags == [0, 1] and record.sizes == [1, 2] and record.padded == 4
    assert record.waits == pytest.approx([0.0011, 0.0007])
    (sent,) = link.sent  # type: ignore[attr-defined]
    assert sent.trace == (7, 1)
    assert record.results == []
    link.complete(0, lambda inputs: inputs)  # type: ignore[attr-defined]
    await asyncio.gather(first, second)
    (result,) = record.results
    assert result is not None and result.compute_us == 1.0


@pytest.mark.parametrize("sees_untagged", [True, False])
async def test_an_observer_that_does_not_see_untagged_batches_is_not_called_for_them(
    sees_untagged: bool,
) -> None:
    observer = Observer(sees_untagged=sees_untagged, untagged=frozenset({0, 2}))
    scheduler, _, link = _scheduler(BatchingOptions.unbatched(), observer)
    x = np.ones((1, 3), np.float32)
    for i in range(3):
        task = asyncio.create_task(scheduler.submit({"x": x}, ("x",), None))
        await settle()
        link.complete(i, lambda inputs: inputs)  # type: ignore[attr-defined]
        await task
    traces = [sent.trace for sent in link.sent]  # type: ignore[attr-defined]
    if sees_untagged:
        assert [r.tags for r in observer.batches] == [[None], [1], [None]]
        assert traces == [(7, 1), (7, 2), (7, 3)]
    else:
        assert [r.tags for r in observer.batches] == [[1]]
        assert traces == [None, (7, 1), None]
    assert [len(r.results) for r in observer.batches] == [1] * len(observer.batches)


async def test_a_failed_run_is_reported_done_without_a_result() -> None:
    observer = Observer()
    scheduler, _, link = _scheduler(BatchingOptions.unbatched(), observer)
    task = asyncio.create_task(scheduler.submit({"x": np.ones((1, 3), np.float32)}, ("x",), None))
    await settle()
    link.fail(0, Internal("boom"))  # type: ignore[attr-defined]
    with pytest.raises(Internal):
        await task
    assert [r.results for r in observer.batches] == [[None]]


async def test_refusals_are_named() -> None:
    observer = Observer()
    options = BatchingOptions(
        max_batch_size=1, max_enqueued_batches=1, num_batch_threads=1, batch_timeout_micros=1000
    )
    scheduler, clock, _ = _scheduler(options, observer)
    x = np.ones((1, 3), np.float32)
    queued = [
        asyncio.create_task(scheduler.submit({"x": x}, ("x",), clock.now() + 0.5)) for _ in range(2)
    ]
    await settle()  # the first runs (held by the fake link), the second waits
    with pytest.raises(Unavailable):
        await scheduler.submit({"x": x}, ("x",), None)
    assert observer.refused == ["queue_full"]
    clock.advance(0.6)  # the waiting request's deadline passes while it is queued
    await settle()
    assert observer.refused == ["queue_full", "expired"]
    for task in queued:
        task.cancel()
    await asyncio.gather(*queued, return_exceptions=True)
