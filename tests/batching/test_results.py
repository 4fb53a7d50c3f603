"""A batch's run and its results: the layout, outputs, deadline and trace a batch is posted with,
and each member handed its own rows (one lease reference each) or the run's error. The fake link
at the one seam; a real channel's accounting says which output space is still held."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from channel.shm.channel import Channel
from gateway.batching import results
from gateway.batching.formation import Task
from gateway.config.batching_options import BatchingOptions
from gateway.errors import Internal, InvalidArgument, ResourceExhausted, Unavailable
from gateway.worker_channel.lease import OutputLease, RunResult
from tests.support.fakes import FakeLink

OUT_END = 4096


@pytest.fixture
def channel() -> Iterator[Channel]:
    with Channel.create(index=0, input_bytes=1 << 12, output_bytes=1 << 13) as channel:
        yield channel


@dataclass
class Record:
    trace: tuple[int, int] | None = (7, 8)
    results: list[RunResult | None] = field(default_factory=list)

    def done(self, result: RunResult | None) -> None:
        self.results.append(result)


@dataclass
class Observer:
    sees_untagged: bool = True
    seen: list[tuple[list[object], list[float], list[int], int]] = field(default_factory=list)
    record: Record = field(default_factory=Record)

    def on_enqueue(self) -> object:
        return None

    def on_batch(
        self, tags: Sequence[object], waits: Sequence[float], sizes: Sequence[int], padded: int
    ) -> Record:
        self.seen.append((list(tags), list(waits), list(sizes), padded))
        return self.record

    def on_refused(self, reason: str) -> None:
        pass


def _task(rows: int, outputs: tuple[str, ...], deadline: float | None, tag: object = None) -> Task:
    x = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) + 100 * rows
    future = asyncio.get_running_loop().create_future()
    return Task({"x": x}, rows, outputs, deadline, future, enqueued_at=10.0, tag=tag)


def _post(
    link: FakeLink, tasks: list[Task], options: BatchingOptions, observer: Observer | None = None
) -> tuple[asyncio.Future[RunResult], results.Posted]:
    return results.post(
        link,
        tasks,
        key="m:1",
        signature="sig",
        options=options,
        observer=observer,  # type: ignore[arg-type]
        now=10.5,
    )


async def test_a_batch_is_posted_merged_padded_with_its_outputs_deadline_and_trace() -> None:
    link, observer = FakeLink(0), Observer()
    tasks = [_task(1, ("y",), 20.0, tag="a"), _task(2, ("z", "y"), 30.0)]
    options = BatchingOptions(max_batch_size=4, allowed_batch_sizes=(4,))
    _, posted = _post(link, tasks, options, observer)
    (sent,) = link.sent
    assert (sent.key, sent.signature, sent.outputs, sent.deadline) == (
        "m:1",
        "sig",
        ["y", "z"],
        30.0,
    )
    np.testing.assert_array_equal(
        sent.inputs["x"][:3], np.concatenate([t.inputs["x"] for t in tasks])
    )
    np.testing.assert_array_equal(sent.inputs["x"][3], tasks[0].inputs["x"][0])  # padding
    assert sent.trace == (7, 8)
    assert observer.seen == [(["a", None], [0.5, 0.5], [1, 2], 4)]
    assert (posted.rows, posted.padded, posted.sent_at, posted.record) == (
        3,
        4,
        10.5,
        observer.record,
    )
    no_deadline = [_task(1, ("y",), 20.0), _task(1, ("y",), None)]
    _post(link, no_deadline, options)
    assert link.sent[1].deadline is None and link.sent[1].trace is None


async def test_an_observer_that_ignores_untagged_batches_sees_none_and_sends_no_trace() -> None:
    link, observer = FakeLink(0), Observer(sees_untagged=False)
    _, posted = _post(link, [_task(1, ("y",), None)], BatchingOptions.unbatched(), observer)
    assert observer.seen == [] and posted.record is None and link.sent[0].trace is None


async def test_a_batch_that_cannot_be_posted_raises_and_its_record_ends_without_a_result() -> None:
    class Full(FakeLink):
        def submit(self, *args: object, **kwargs: object) -> asyncio.Future[RunResult]:
            raise ResourceExhausted("worker 0 shared-memory input area is full")

    observer = Observer()
    task = _task(1, ("y",), None)
    with pytest.raises(ResourceExhausted):
        _post(Full(0), [task], BatchingOptions(max_batch_size=4), observer)
    assert observer.record.results == [None] and not task.future.done()


async def test_each_waiting_member_gets_its_rows_with_one_reference_and_the_run_returns_its_own(
    channel: Channel,
) -> None:
    tasks = [_task(1, ("y",), None), _task(2, ("y", "z"), None), _task(1, ("z",), None)]
    tasks[2].future.cancel()  # left before the run ended: it holds nothing
    y = np.arange(10, dtype=np.float32).reshape(5, 2)
    lease = OutputLease(channel, OUT_END)
    run = RunResult({"y": y, "z": -y}, 1.0, lease=lease)
    results.hand_out(tasks, run, padded=5, solo=False)
    first, second = tasks[0].future.result(), tasks[1].future.result()
    assert list(first) == ["y"] and list(second) == ["y", "z"]
    np.testing.assert_array_equal(first["y"], y[0:1])
    np.testing.assert_array_equal(second["z"], -y[1:3])
    assert np.shares_memory(second["y"], y)  # views on the run's outputs
    assert run.lease is None and lease.refs == 2  # padding row 5 and the cancelled: none
    first.release()
    second.release()
    assert channel.outputs_held == 0


async def test_outputs_without_the_batch_dimension_fail_every_member_and_hold_nothing(
    channel: Channel,
) -> None:
    tasks = [_task(1, ("y",), None), _task(1, ("y",), None)]
    future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
    lease = OutputLease(channel, OUT_END)
    future.set_result(RunResult({"y": np.zeros(())}, 1.0, lease=lease))
    posted = results.Posted(tasks, 2, 2, 0.0, None)
    assert results.finish(posted, future, solo=False)  # the run itself succeeded
    for task in tasks:
        with pytest.raises(Internal, match="must keep the batch dimension"):
            task.future.result()
    assert lease.refs == 0 and channel.outputs_held == 0


async def test_a_failed_or_cancelled_run_fails_every_waiting_member_and_ends_the_record() -> None:
    loop = asyncio.get_running_loop()
    for outcome, expected in ((InvalidArgument("bad"), InvalidArgument), (None, Unavailable)):
        tasks = [_task(1, ("y",), None), _task(1, ("y",), None)]
        tasks[1].future.set_result(None)  # type: ignore[arg-type]  # already answered
        record = Record()
        future: asyncio.Future[RunResult] = loop.create_future()
        if outcome is None:
            future.cancel()  # shutdown
        else:
            future.set_exception(outcome)
        assert not results.finish(results.Posted(tasks, 2, 2, 0.0, record), future, solo=False)
        with pytest.raises(expected):
            tasks[0].future.result()
        assert tasks[1].future.result() is None and record.results == [None]
    unavailable = _task(1, ("y",), None)
    results.fail([unavailable], Unavailable("the server is shutting down"))
    with pytest.raises(Unavailable, match="shutting down"):
        unavailable.future.result()


async def test_an_unbatched_member_gets_the_whole_run() -> None:
    task = _task(3, ("y",), None)
    future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
    future.set_result(RunResult({"y": np.ones(7)}, 1.0))  # no batch dimension kept: solo
    record = Record()
    assert results.finish(results.Posted([task], 3, 3, 0.0, record), future, solo=True)
    np.testing.assert_array_equal(task.future.result()["y"], np.ones(7))
    assert record.results == [future.result()]
