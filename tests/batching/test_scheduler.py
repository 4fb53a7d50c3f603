"""The batch scheduler, deterministically: an injected clock, fake links that block on purpose."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gateway.batching.queue_admission import QUEUE_FULL
from gateway.batching.scheduler import BatchScheduler
from gateway.batching.window import WINDOW_S
from gateway.config.batching_options import BatchingOptions
from gateway.errors import DeadlineExceeded, Internal, InvalidArgument, Unavailable
from tests.support.fakes import FakeClock, FakeLink, fake_dispatcher
from tests.support.idle_loop import settle

Compute = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


def double(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = inputs["x"]
    return {"y": x * 2, "rowsum": x.reshape(len(x), -1).sum(axis=1)}


def rows(start: int, n: int, width: int = 3) -> np.ndarray:
    return np.arange(start * width, (start + n) * width, dtype=np.float32).reshape(n, width)


class Harness:
    def __init__(self, options: BatchingOptions, *, links: int = 1, max_in_flight: int = 1) -> None:
        self.dispatcher, self.links = fake_dispatcher(links, max_in_flight)
        self.clock = FakeClock()
        self.scheduler = BatchScheduler(
            servable_key="m:1",
            signature="serving_default",
            options=options,
            dispatcher=self.dispatcher,
            clock=self.clock,
        )

    @property
    def link(self) -> FakeLink:
        return self.links[0]

    def send(
        self, x: np.ndarray, outputs: tuple[str, ...] = ("y",), deadline: float | None = None
    ) -> asyncio.Task[dict[str, np.ndarray]]:
        return asyncio.create_task(self.scheduler.submit({"x": x}, outputs, deadline))


def batched(**kwargs: Any) -> BatchingOptions:
    kwargs.setdefault("num_batch_threads", 1)
    return BatchingOptions(**kwargs)


async def test_timeout_closes_a_batch() -> None:
    h = Harness(batched(max_batch_size=8, batch_timeout_micros=1000))
    first, second = h.send(rows(0, 1)), h.send(rows(1, 2))
    await settle()
    h.clock.advance(0.0009)
    await settle()
    assert h.link.sent == []  # not yet: the timeout has not passed
    h.clock.advance(0.0002)
    await settle()
    (batch,) = h.link.sent
    np.testing.assert_array_equal(batch.inputs["x"], rows(0, 3))
    h.link.complete(0, double)
    np.testing.assert_array_equal((await first)["y"], rows(0, 1) * 2)
    np.testing.assert_array_equal((await second)["y"], rows(1, 2) * 2)


async def test_a_full_batch_goes_without_waiting_for_the_timeout() -> None:
    h = Harness(batched(max_batch_size=4, batch_timeout_micros=10**6))
    tasks = [h.send(rows(0, 2)), h.send(rows(2, 2))]
    await settle()
    assert len(h.link.sent) == 1 and h.link.sent[0].inputs["x"].shape == (4, 3)
    h.link.complete(0, double)
    for i, task in enumerate(tasks):
        np.testing.assert_array_equal((await task)["y"], rows(2 * i, 2) * 2)


async def test_work_conserving_dispatch_and_growth_while_busy() -> None:
    h = Harness(batched(max_batch_size=8))
    first = h.send(rows(0, 1))
    await settle()
    assert len(h.link.sent) == 1  # alone, at once: a slot was free and the timeout is 0
    waiting = [h.send(rows(i, 1)) for i in range(1, 4)]
    await settle()
    assert len(h.link.sent) == 1 and h.scheduler.queued_tasks == 3
    h.link.complete(0, double)
    await settle()
    assert len(h.link.sent) == 2
    np.testing.assert_array_equal(h.link.sent[1].inputs["x"], rows(1, 3))
    h.link.complete(1, double)
    await first
    for i, task in enumerate(waiting, start=1):
        np.testing.assert_array_equal((await task)["y"], rows(i, 1) * 2)
    assert (h.scheduler.stats.batches, h.scheduler.stats.rows) == (2, 4)


async def test_requests_of_one_loop_turn_share_one_batch_though_a_worker_is_free() -> None:
    h = Harness(batched(max_batch_size=8, num_batch_threads=4), max_in_flight=4)
    tasks = [h.send(rows(i, 1)) for i in range(3)]  # all three run in the same loop turn
    await settle()
    (batch,) = h.link.sent  # one descriptor for the three, though the worker had free slots
    np.testing.assert_array_equal(batch.inputs["x"], rows(0, 3))
    later = h.send(rows(3, 1))
    await settle()
    assert len(h.link.sent) == 2  # work-conserving: the next turn's request goes at once
    h.link.complete(0, double)
    h.link.complete(1, double)
    for i, task in enumerate([*tasks, later]):
        np.testing.assert_array_equal((await task)["y"], rows(i, 1) * 2)
    assert (h.scheduler.stats.batches, h.scheduler.stats.rows) == (2, 4)


async def test_allowed_batch_sizes_pad_with_the_first_row_and_never_return_padding() -> None:
    h = Harness(batched(max_batch_size=8, allowed_batch_sizes=(2, 4, 8)))
    busy = h.send(rows(9, 1))
    await settle()
    tasks = [h.send(rows(0, 2)), h.send(rows(2, 1))]
    await settle()
    h.link.complete(0, double)
    await settle()
    sent = h.link.sent[1].inputs["x"]
    assert sent.shape == (4, 3)
    np.testing.assert_array_equal(sent[:3], rows(0, 3))
    np.testing.assert_array_equal(sent[3], rows(0, 1)[0])
    h.link.complete(1, double)
    await busy
    assert (await tasks[0])["y"].shape == (2, 3)
    np.testing.assert_array_equal((await tasks[1])["y"], rows(2, 1) * 2)
    assert h.scheduler.stats.padding_rows == 2  # 1 → 2 for the first batch, 3 → 4 here


async def test_variable_length_inputs_are_padded_together() -> None:
    h = Harness(batched(max_batch_size=8, pad_variable_length_inputs=True))
    busy = h.send(np.ones((1, 2), np.float32))
    await settle()
    short = np.array([[7, 8]], np.float32)
    long = np.arange(10, dtype=np.float32).reshape(2, 5)
    tasks = [h.send(short, ("rowsum",)), h.send(long, ("rowsum",))]
    await settle()
    h.link.complete(0, double)
    await settle()
    sent = h.link.sent[1].inputs["x"]
    np.testing.assert_array_equal(sent[0], [7, 8, 7, 7, 7])  # padded with its first element
    np.testing.assert_array_equal(sent[1:], long)
    h.link.complete(1, double)
    await busy
    np.testing.assert_array_equal((await tasks[0])["rowsum"], [36])
    np.testing.assert_array_equal((await tasks[1])["rowsum"], long.sum(axis=1))


async def test_different_shapes_do_not_share_a_batch_without_padding() -> None:
    h = Harness(batched(max_batch_size=8))
    busy = h.send(rows(0, 1))
    await settle()
    a, b = h.send(rows(0, 1, width=3)), h.send(rows(0, 1, width=4))
    await settle()
    assert h.scheduler.queued_batches == 2
    h.link.complete(0, double)
    await settle()
    h.link.complete(1, double)
    await settle()
    h.link.complete(2, double)
    await busy
    assert (await a)["y"].shape == (1, 3) and (await b)["y"].shape == (1, 4)


async def test_large_request_is_split_and_reassembled() -> None:
    options = batched(
        max_batch_size=10,
        enable_large_batch_splitting=True,
        max_execution_batch_size=4,
        num_batch_threads=4,
    )
    h = Harness(options, max_in_flight=4)
    big = h.send(rows(0, 10))
    await settle()
    assert [b.inputs["x"].shape[0] for b in h.link.sent] == [4, 4, 2]
    for i in (2, 0, 1):  # completions in any order
        h.link.complete(i, double)
    np.testing.assert_array_equal((await big)["y"], rows(0, 10) * 2)


async def test_split_fills_the_open_batch_first() -> None:
    options = batched(
        max_batch_size=10, enable_large_batch_splitting=True, max_execution_batch_size=4
    )
    h = Harness(options)
    busy = h.send(rows(20, 1))
    await settle()
    small = h.send(rows(0, 1))
    big = h.send(rows(1, 6))
    await settle()
    for i in range(3):
        h.link.complete(i, double)
        await settle()
    assert [b.inputs["x"].shape[0] for b in h.link.sent] == [1, 4, 3]
    await busy
    np.testing.assert_array_equal((await small)["y"], rows(0, 1) * 2)
    np.testing.assert_array_equal((await big)["y"], rows(1, 6) * 2)


async def test_full_queue_is_refused_at_once() -> None:
    h = Harness(batched(max_batch_size=2, max_enqueued_batches=1))
    busy = h.send(rows(0, 1))
    await settle()
    queued = h.send(rows(1, 2))
    await settle()
    with pytest.raises(Unavailable) as info:
        await h.scheduler.submit({"x": rows(3, 1)}, ("y",), None)
    assert info.value.message == QUEUE_FULL
    assert h.scheduler.stats.rejected_full == 1
    h.link.complete(0, double)
    await settle()
    h.link.complete(1, double)
    await busy
    await queued


async def test_oversize_request_without_splitting() -> None:
    h = Harness(batched(max_batch_size=4))
    with pytest.raises(InvalidArgument) as info:
        await h.scheduler.submit({"x": rows(0, 5)}, ("y",), None)
    assert info.value.message == "Task size 5 is larger than maximum input batch size 4"
    assert h.link.sent == []


async def test_inputs_with_different_batch_sizes_are_refused() -> None:
    h = Harness(batched(max_batch_size=4))
    with pytest.raises(InvalidArgument, match="same size in their 0th dimension"):
        await h.scheduler.submit({"a": rows(0, 1), "b": rows(0, 2)}, ("y",), None)


async def test_deadline_expiry_in_queue_frees_the_slot_and_the_empty_batch_is_not_run() -> None:
    h = Harness(batched(max_batch_size=8))
    busy = h.send(rows(0, 1))
    await settle()
    doomed = [h.send(rows(1, 1), deadline=h.clock.now() + 0.5) for _ in range(2)]
    await settle()
    h.clock.advance(0.6)
    await settle()
    for task in doomed:
        with pytest.raises(DeadlineExceeded):
            await task
    assert h.scheduler.queued_tasks == 0 and h.scheduler.queued_batches == 0
    h.link.complete(0, double)
    await busy
    await settle()
    assert len(h.link.sent) == 1  # the batch whose members all expired never ran
    assert h.scheduler.stats.expired == 2


async def test_expired_before_queueing() -> None:
    h = Harness(batched(max_batch_size=8))
    with pytest.raises(DeadlineExceeded):
        await h.scheduler.submit({"x": rows(0, 1)}, ("y",), h.clock.now())


async def test_cancelled_request_leaves_its_batch() -> None:
    h = Harness(batched(max_batch_size=8))
    busy = h.send(rows(0, 1))
    await settle()
    keep, cancel = h.send(rows(1, 1)), h.send(rows(2, 2))
    await settle()
    cancel.cancel()
    await settle()
    assert h.scheduler.queued_tasks == 1
    h.link.complete(0, double)
    await settle()
    np.testing.assert_array_equal(h.link.sent[1].inputs["x"], rows(1, 1))
    h.link.complete(1, double)
    await busy
    np.testing.assert_array_equal((await keep)["y"], rows(1, 1) * 2)
    assert cancel.cancelled() and h.scheduler.stats.cancelled == 1


async def test_each_request_gets_its_own_output_selection() -> None:
    h = Harness(batched(max_batch_size=8))
    busy = h.send(rows(0, 1))
    await settle()
    only_y, only_sum, both = (
        h.send(rows(1, 1), ("y",)),
        h.send(rows(2, 1), ("rowsum",)),
        h.send(rows(3, 1), ("rowsum", "y")),
    )
    await settle()
    h.link.complete(0, double)
    await settle()
    assert h.link.sent[1].outputs == ["y", "rowsum"]
    h.link.complete(1, double)
    await busy
    assert list(await only_y) == ["y"]
    assert list(await only_sum) == ["rowsum"]
    assert sorted(await both) == ["rowsum", "y"]


async def test_a_worker_error_fails_every_member() -> None:
    h = Harness(batched(max_batch_size=8))
    busy = h.send(rows(0, 1))
    await settle()
    members = [h.send(rows(i, 1)) for i in range(3)]
    await settle()
    h.link.complete(0, double)
    await settle()
    h.link.fail(1, Unavailable("worker 0 exited"))
    await busy
    for task in members:
        with pytest.raises(Unavailable, match="exited"):
            await task
    assert h.scheduler.in_flight == 0


async def test_outputs_without_a_batch_dimension_fail_the_batch() -> None:
    h = Harness(batched(max_batch_size=8))
    task = h.send(rows(0, 2))
    await settle()
    h.link.complete(0, lambda inputs: {"y": np.zeros(3, np.float32)})
    with pytest.raises(Internal, match="batch dimension"):
        await task


async def test_drain_runs_what_is_queued_then_refuses() -> None:
    h = Harness(batched(max_batch_size=8, batch_timeout_micros=10**7))
    queued = h.send(rows(0, 1))
    await settle()
    drain = asyncio.create_task(h.scheduler.drain())
    await settle()
    assert len(h.link.sent) == 1 and not drain.done()
    h.link.complete(0, double)
    await drain
    np.testing.assert_array_equal((await queued)["y"], rows(0, 1) * 2)
    with pytest.raises(Unavailable, match="unloaded"):
        await h.scheduler.submit({"x": rows(0, 1)}, ("y",), None)


async def test_unbatched_mode_sends_each_request_alone() -> None:
    h = Harness(BatchingOptions.unbatched(), max_in_flight=1)
    tasks = [h.send(rows(i, 1)) for i in range(3)]
    await settle()
    for i in range(3):
        h.link.complete(i, double)
        await settle()
    assert [b.inputs["x"].shape for b in h.link.sent] == [(1, 3)] * 3
    for i, task in enumerate(tasks):
        np.testing.assert_array_equal((await task)["y"], rows(i, 1) * 2)


async def test_two_queues_share_workers_fairly() -> None:
    h = Harness(batched(max_batch_size=8))
    other = BatchScheduler(
        servable_key="m:1",
        signature="other",
        options=batched(max_batch_size=8),
        dispatcher=h.dispatcher,
        clock=h.clock,
    )
    busy = h.send(rows(0, 1))
    await settle()
    mine = h.send(rows(1, 1))
    theirs = asyncio.create_task(other.submit({"x": rows(2, 1)}, ("y",), None))
    await settle()
    h.link.complete(0, double)
    await settle()
    h.link.complete(1, double)
    await settle()
    h.link.complete(2, double)
    await busy
    np.testing.assert_array_equal((await mine)["y"], rows(1, 1) * 2)
    np.testing.assert_array_equal((await theirs)["y"], rows(2, 1) * 2)


async def _time_one_batch(h: Harness, seconds: float) -> None:
    """Run one batch that takes ``seconds`` on the fake clock, so the scheduler has timed one."""
    task = h.send(rows(0, 1))
    await settle()
    h.clock.advance(seconds)
    h.link.complete(len(h.link.sent) - 1, double)
    await task


async def test_request_that_would_wait_past_its_deadline_is_refused_at_once() -> None:
    h = Harness(batched(max_batch_size=8))
    await _time_one_batch(h, 0.1)
    assert h.scheduler.service_s == pytest.approx(0.1)
    with pytest.raises(DeadlineExceeded, match="more than its deadline leaves"):
        await h.scheduler.submit({"x": rows(0, 1)}, ("y",), h.clock.now() + 0.05)
    assert h.scheduler.stats.rejected_late == 1
    ok = h.send(rows(1, 1), deadline=h.clock.now() + 0.5)  # enough time: accepted
    await settle()
    h.link.complete(1, double)
    np.testing.assert_array_equal((await ok)["y"], rows(1, 1) * 2)


async def test_request_that_cannot_finish_in_time_is_dropped_not_computed() -> None:
    h = Harness(batched(max_batch_size=8))
    await _time_one_batch(h, 0.1)
    busy = h.send(rows(0, 1))
    await settle()
    doomed = h.send(rows(1, 1), deadline=h.clock.now() + 0.25)
    await settle()
    h.clock.advance(0.2)  # 0.05 s left, but a batch takes 0.1 s
    h.link.complete(1, double)
    await busy
    with pytest.raises(DeadlineExceeded, match="more than the time left"):
        await doomed
    assert len(h.link.sent) == 2  # the doomed request was never sent to a worker
    assert h.scheduler.in_flight == 0 and h.scheduler.queued_tasks == 0


@pytest.mark.parametrize(
    "options",
    [
        batched(max_batch_size=8, batch_timeout_micros=1000),
        batched(max_batch_size=8, allowed_batch_sizes=(4, 8)),
        batched(max_batch_size=8, enable_large_batch_splitting=True, max_execution_batch_size=4),
        BatchingOptions.unbatched(),
    ],
    ids=["timeout", "padding", "splitting", "unbatched"],
)
async def test_a_request_of_zero_rows_is_answered_with_zero_rows(options: BatchingOptions) -> None:
    """A [0, 3] tensor was an INTERNAL KeyError with batching on (it planned to join an open batch
    that did not exist); it is now a batch of its own, unpadded, and an open batch is untouched."""

    h = Harness(options)
    waiting = h.send(rows(0, 1)) if options.batch_timeout_micros else None
    empty = h.send(np.zeros((0, 3), np.float32))
    await settle()
    assert [b.inputs["x"].shape for b in h.link.sent] == [(0, 3)]
    h.link.complete(0, lambda inputs: {"y": inputs["x"] * 2})
    assert (await empty)["y"].shape == (0, 3)
    if waiting is not None:
        h.clock.advance(0.002)
        await settle()
        np.testing.assert_array_equal(h.link.sent[1].inputs["x"], rows(0, 1))
        h.link.complete(1, double)
        np.testing.assert_array_equal((await waiting)["y"], rows(0, 1) * 2)


async def test_latency_target_refuses_what_would_wait_too_long_even_without_a_deadline() -> None:
    """``--max_queue_delay_ms``: with batches timed at 0.1 s on one thread, a request behind two
    batches would start 0.2 s late — over a 0.15 s target it is refused at once; behind one
    (0.1 s) it is accepted. Overload then costs refusals, not latency."""

    h = Harness(batched(max_batch_size=1, max_enqueued_batches=100, max_queue_delay_s=0.15))
    await _time_one_batch(h, 0.1)
    first = h.send(rows(1, 1))  # in flight
    second = h.send(rows(2, 1))  # queued: one batch ahead of it
    await settle()
    with pytest.raises(Unavailable, match=r"about 200 ms, over the latency target of 150 ms"):
        await h.scheduler.submit({"x": rows(3, 1)}, ("y",), None)
    assert h.scheduler.stats.rejected_late == 1
    h.link.complete(1, double)
    await settle()
    h.link.complete(2, double)
    np.testing.assert_array_equal((await first)["y"], rows(1, 1) * 2)
    np.testing.assert_array_equal((await second)["y"], rows(2, 1) * 2)


async def test_a_deadline_too_short_for_one_batch_on_an_idle_queue_is_deadline_exceeded() -> None:
    """A 2 ms deadline on an idle queue whose batches take 5 ms (no latency
    target) cannot be met by this request's own batch: DEADLINE_EXCEEDED as TF Serving answers
    an expired deadline, not UNAVAILABLE (which clients retry, with the same deadline)."""

    h = Harness(batched(max_batch_size=8))
    await _time_one_batch(h, 0.005)
    assert h.scheduler.in_flight == 0 and h.scheduler.queued_tasks == 0  # idle
    with pytest.raises(DeadlineExceeded) as info:
        await h.scheduler.submit({"x": rows(0, 1)}, ("y",), h.clock.now() + 0.002)
    assert info.value.message == (
        "Deadline exceeded: a batch of m:1 takes about 5 ms, more than its deadline leaves (2 ms)"
    )
    assert h.scheduler.stats.rejected_late == 1 and len(h.link.sent) == 1  # never sent


async def test_one_client_at_a_time_never_waits_for_the_concurrency_window() -> None:
    """Requests that never find company go at the end of their loop turn, however many."""

    h = Harness(batched(max_batch_size=8))
    for i in range(50):
        task = h.send(rows(i, 1))
        await settle()
        assert len(h.link.sent) == i + 1  # sent without the clock moving
        h.link.complete(i, double)
        np.testing.assert_array_equal((await task)["y"], rows(i, 1) * 2)
    assert (h.scheduler.stats.batches, h.scheduler.stats.rows) == (50, 50)


async def test_over_the_latency_target_stays_a_retryable_refusal_whatever_the_deadline() -> None:
    """Under overload with ``--max_queue_delay_ms`` the excess is refused UNAVAILABLE (retryable),
    even when its deadline is also too short: the queue, not the request, is the reason."""

    h = Harness(batched(max_batch_size=1, max_enqueued_batches=100, max_queue_delay_s=0.15))
    await _time_one_batch(h, 0.1)
    first, second = h.send(rows(1, 1)), h.send(rows(2, 1))
    await settle()
    with pytest.raises(Unavailable, match="over the latency target"):
        await h.scheduler.submit({"x": rows(3, 1)}, ("y",), h.clock.now() + 0.01)
    h.link.complete(1, double)
    await settle()
    h.link.complete(2, double)
    await first
    await second


async def test_under_sustained_concurrency_a_batch_waits_for_company() -> None:
    """Once arrivals keep finding company, an open batch is held until the window ends (then
    goes with everyone who joined), or at once when it is full."""

    h = Harness(batched(max_batch_size=8))
    first = h.send(rows(0, 1))
    await settle()
    busy = [h.send(rows(i, 1)) for i in range(1, 8)]  # arrive while a batch runs
    await settle()
    h.link.complete(0, double)
    await settle()
    assert len(h.link.sent) == 1  # the seven are held: the queue is concurrent now
    h.clock.advance(WINDOW_S * 0.9)
    await settle()
    assert len(h.link.sent) == 1  # not yet
    h.clock.advance(WINDOW_S * 0.2)
    await settle()
    np.testing.assert_array_equal(h.link.sent[1].inputs["x"], rows(1, 7))
    full = [h.send(rows(8 + i, 1)) for i in range(8)]  # a full batch goes without waiting
    h.link.complete(1, double)
    await settle()
    assert len(h.link.sent) == 3 and len(h.link.sent[2].inputs["x"]) == 8
    h.link.complete(2, double)
    for i, task in enumerate([first, *busy, *full]):
        np.testing.assert_array_equal((await task)["y"], rows(i, 1) * 2)


class _Spinning(Exception):
    """Raised by the counting dispatcher once the pump has asked it too often (a spin)."""


async def test_a_batch_whose_members_all_left_is_dropped_before_their_callbacks_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its requests cancelled in the same loop turn as the running batch finished: the pump that
    follows finds the queued batch with no live member before their done-callbacks take them
    out. It must drop the batch (it used to pick a worker for it again and again, for ever: the
    loop stuck at 100% CPU; here the dispatcher counts the picks and stops a spin)."""

    h = Harness(batched(max_batch_size=8))
    picks = []
    pick = h.dispatcher.pick

    def counting(key: str, sender: object = None) -> Any:
        picks.append(key)
        if len(picks) > 100:
            raise _Spinning
        return pick(key, sender)

    monkeypatch.setattr(h.dispatcher, "pick", counting)
    busy = h.send(rows(0, 1))
    await settle()
    leaving = [h.send(rows(1, 1)), h.send(rows(2, 1))]
    await settle()
    h.link.complete(0, double)  # the run's done-callback is queued before theirs
    for task in leaving:
        task.cancel()
    await settle()
    np.testing.assert_array_equal((await busy)["y"], rows(0, 1) * 2)
    assert all(task.cancelled() for task in leaving)
    assert h.scheduler.queued_tasks == 0 and len(h.link.sent) == 1
    assert len(picks) < 10, "the pump spun on a batch nobody waits for"
    after = h.send(rows(3, 1))  # the queue still serves
    await settle()
    h.link.complete(1, double)
    np.testing.assert_array_equal((await after)["y"], rows(3, 1) * 2)
