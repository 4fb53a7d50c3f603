"""The run link: a batch laid out in the input area, its outputs as read-only views under a lease,
the input space back at the reply, failures resolving every run. A real channel; the worker's end
is played by the test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import numpy as np
import pytest

from channel import messages
from channel.messages import RunRequest, TensorDesc
from channel.shm.channel import Channel
from gateway.errors import InputAreaFull, InputTooLarge, Internal, InvalidArgument, Unavailable
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.lease import RunResult
from gateway.worker_channel.run_link import RunLink
from gateway.worker_channel.watchdog import RunTimes
from tests.support.worker_end import WorkerEnd, resolved

INPUT_BYTES = 1 << 12


class Done(list[str]):
    """Each ``on_run_done`` call, and an event set by the latest."""

    def __init__(self) -> None:
        super().__init__()
        self.event = asyncio.Event()

    def __call__(self) -> None:
        self.append("done")
        self.event.set()


@asynccontextmanager
async def _live_link() -> AsyncIterator[tuple[RunLink, WorkerEnd, Done]]:
    """A live link, the worker's end of its channel, and the ``Done`` that records each
    ``on_run_done`` call."""
    loop = asyncio.get_running_loop()
    channel = Channel.create(index=2, input_bytes=INPUT_BYTES, output_bytes=1 << 13)
    endpoint = Endpoint(2, channel, loop)
    endpoint.open()
    done = Done()
    link = RunLink(endpoint, loop, on_run_done=done, run_times=RunTimes())
    try:
        yield link, WorkerEnd(channel), done
    finally:
        endpoint.close(Unavailable("test over"))


def _submit(link: RunLink, **inputs: np.ndarray) -> asyncio.Future[RunResult]:
    layout = {name: (array.dtype, array.shape) for name, array in inputs.items()}

    def fill(name: str, dest: np.ndarray) -> None:
        dest[...] = inputs[name]

    return link.submit("m:1", layout, fill, ["y"], None, "serving_default")


async def test_a_run_goes_through_shared_memory_both_ways() -> None:
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    words = np.array([b"a", b"bc", b""], dtype=object)

    async with _live_link() as (link, worker, done):
        run = _submit(link, x=x, words=words)
        assert link.runs_in_flight == 1 and link.channel.input_used > 0
        (request,) = worker.requests()
        assert isinstance(request, RunRequest)
        inputs = worker.inputs(request)
        np.testing.assert_array_equal(inputs["x"], x)
        assert list(inputs["words"]) == [b"a", b"bc", b""]
        assert (request.key, request.outputs, request.signature) == (
            "m:1",
            ("y",),
            "serving_default",
        )
        worker.post(worker.run_reply(request, {"y": x * 2}, compute_us=250.0))
        result = await resolved(run)
        assert not result.outputs["y"].flags.writeable  # a view on the output area
        np.testing.assert_array_equal(result.outputs["y"], x * 2)
        assert result.compute_us == 250.0
        assert link.runs_in_flight == 0 and link.channel.input_used == 0
        assert done == ["done"]  # capacity announced once the input space was free
        assert link.run_times is not None and link.run_times.expected_s("m:1", 3) == 250e-6
        assert link.channel.outputs_held == 1
        result.release()
        assert link.channel.outputs_held == 0 and link.channel.output_used == 0


async def test_a_failed_run_gets_the_workers_error_and_its_output_space_goes_back() -> None:
    async with _live_link() as (link, worker, done):
        run = _submit(link, x=np.ones((1, 2), np.float32))
        (request,) = worker.requests()
        end = worker.channel.output_allocated
        request_id = messages.request_id(request)
        worker.post(messages.error_reply(request_id, "INVALID_ARGUMENT", "bad x", out_end=end))
        with pytest.raises(InvalidArgument, match="bad x"):
            await resolved(run)
        assert link.channel.input_used == 0 and link.channel.outputs_held == 0
        assert done == ["done"]
        assert link.run_times is not None and link.run_times.expected_s("m:1", 1) is None


async def test_unreadable_outputs_are_internal_and_held_nowhere() -> None:
    async with _live_link() as (link, worker, _done):
        run = _submit(link, x=np.ones((1, 2), np.float32))
        (request,) = worker.requests()
        desc = TensorDesc("y", "float32", (1, 2), 1 << 20, 8)
        request_id = messages.request_id(request)
        reply = messages.run_reply(request_id, outputs=[desc], out_end=0, compute_us=1.0)
        worker.post(reply)
        with pytest.raises(Internal, match="worker 2 sent unreadable outputs"):
            await resolved(run)
        assert link.channel.outputs_held == 0


async def test_byte_swapped_inputs_reach_the_worker_as_their_values() -> None:
    """The payload is native little-endian whatever the batch's arrays are: the descriptor
    names the canonical dtype, so the rows are converted as they are written."""
    x = np.arange(6, dtype=">f4").reshape(3, 2)

    async with _live_link() as (link, worker, _done):
        run = _submit(link, x=x)
        (request,) = worker.requests()
        assert isinstance(request, RunRequest) and request.inputs[0].dtype == "float32"
        np.testing.assert_array_equal(worker.inputs(request)["x"], x)
        run.cancel()


async def test_fixed_width_numpy_strings_travel_as_utf8_strings() -> None:
    words = np.array([["é", "bc"], ["", "d"]])  # numpy's <U2, not an object array

    async with _live_link() as (link, worker, _done):
        run = _submit(link, words=words)
        (request,) = worker.requests()
        assert isinstance(request, RunRequest) and request.inputs[0].dtype == "string"
        got = worker.inputs(request)["words"]
        assert got.tolist() == [["é".encode(), b"bc"], [b"", b"d"]]
        run.cancel()


async def test_outputs_of_a_run_nobody_awaits_go_back_at_once() -> None:
    async with _live_link() as (link, worker, done):
        run = _submit(link, x=np.ones((1, 2), np.float32))
        run.cancel()
        worker.answer_runs(lambda inputs: {"y": inputs["x"]})
        await asyncio.wait_for(done.event.wait(), 30)
        assert link.channel.outputs_held == 0 and link.channel.output_used == 0


async def test_a_batch_the_input_area_cannot_hold_is_refused_and_nothing_is_posted() -> None:
    """Never (larger than the whole area): InputTooLarge. Not now (the area holds another
    run): InputAreaFull, with the bytes it needs, and ``check_room`` says so beforehand."""

    async with _live_link() as (link, worker, _done):
        big = np.ones((INPUT_BYTES // 4 + 1,), np.float32)
        with pytest.raises(InputTooLarge, match="more than worker 2's whole shared-memory input"):
            _submit(link, x=big)
        assert worker.requests() == [] and link.runs_in_flight == 0
        assert link.channel.input_used == 0
        half = np.ones((INPUT_BYTES // 8 * 3 // 4,), np.float32)  # 3/8 of the area
        _submit(link, x=half)
        with pytest.raises(InputAreaFull, match="worker 2 shared-memory input area is full"):
            link.check_room({"x": (np.dtype(np.float32), (INPUT_BYTES // 4 * 3 // 4,))})
        with pytest.raises(InputAreaFull) as info:
            _submit(link, x=np.ones((INPUT_BYTES // 4 * 3 // 4,), np.float32))
        assert info.value.needed == INPUT_BYTES * 3 // 4 and len(worker.requests()) == 1
        link.check_room({"x": (half.dtype, half.shape)})  # another of that size still fits


async def test_no_run_is_posted_to_a_worker_that_is_gone() -> None:
    async with _live_link() as (link, _worker, _done):
        link.endpoint.close(Unavailable("worker 2 exited (code -9)"))
        with pytest.raises(Unavailable, match=r"^worker 2 exited \(code -9\)$"):
            _submit(link, x=np.ones((1, 2), np.float32))
        assert link.runs_in_flight == 0 and link.channel.input_used == 0


async def test_the_oldest_run_computes_since_it_was_posted_or_the_previous_one_finished() -> None:
    async with _live_link() as (link, worker, _done):
        assert link.oldest_run() is None
        first = _submit(link, x=np.ones((3, 2), np.float32))
        second = _submit(link, x=np.ones((5, 2), np.float32))
        oldest = link.oldest_run()
        assert oldest is not None and oldest[:2] == ("m:1", 3)
        requests = worker.requests()
        worker.post(worker.run_reply(requests[0], {"y": np.ones((3, 2), np.float32)}))
        (await resolved(first)).release()
        oldest = link.oldest_run()
        assert oldest is not None and oldest[:2] == ("m:1", 5)
        assert oldest[2] == link.last_run_done_at  # it computes once the first finished
        second.cancel()


async def test_closing_the_endpoint_fails_every_run() -> None:
    async with _live_link() as (link, _worker, _done):
        runs = [_submit(link, x=np.ones((1, 2), np.float32)) for _ in range(2)]
        link.endpoint.close(Unavailable("worker 2 exited (code -9)"))
        assert link.runs_in_flight == 0
        for run in runs:
            with pytest.raises(Unavailable, match="exited"):
                await run
