"""Warmup replay on one worker: each run its iterations, one at a time; a required run's failure
fails the warmup, an optional one's is logged; a full input area waits for room, or says what to
raise; the report carries the worker's own count. A fake run link and control link at the one
seam (the worker), a real dispatcher for capacity."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from channel.shm.channel import Channel
from gateway.errors import InvalidArgument, ResourceExhausted, ServingError
from gateway.runs.dispatcher import Dispatcher
from gateway.worker_channel.lease import OutputLease, RunResult
from gateway.worker_channel.warmup_runs import WarmupReport, WarmupRun
from gateway.worker_pool.warmup_replay import warm_up
from tests.support.idle_loop import settle

KEY = "m:1"


@dataclass
class Sent:
    signature: str
    inputs: dict[str, np.ndarray]
    outputs: list[str] | None


@dataclass
class Worker:
    """A worker that answers each run at once (with ``errors`` popped for the runs it refuses),
    whose input area is full for the next ``full`` submissions while ``in_flight`` runs are
    elsewhere, and that counts ``runs_seen`` runs when pinged."""

    index: int = 4
    sent: list[Sent] = field(default_factory=list)
    errors: list[ServingError | None] = field(default_factory=list)
    full: int = 0
    runs_in_flight: int = 0
    runs_seen: int = 17
    channel: Channel | None = None
    leases: list[OutputLease] = field(default_factory=list)
    refused: asyncio.Event = field(default_factory=asyncio.Event)

    def submit(
        self,
        key: str,
        layout: Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]],
        fill: Any,
        outputs: Sequence[str] | None,
        deadline: float | None,
        signature: str = "",
    ) -> asyncio.Future[RunResult]:
        assert key == KEY and deadline is None
        if self.full:
            self.full -= 1
            self.refused.set()
            raise ResourceExhausted("worker 4 shared-memory input area is full; retry later")
        inputs = {name: np.empty(shape, dtype) for name, (dtype, shape) in layout.items()}
        for name, dest in inputs.items():
            fill(name, dest)
        self.sent.append(Sent(signature, inputs, None if outputs is None else list(outputs)))
        future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        error = self.errors.pop(0) if self.errors else None
        if error is not None:
            future.set_exception(error)
            return future
        lease = None
        if self.channel is not None:
            lease = OutputLease(self.channel, 4096 * (len(self.leases) + 1))
            self.leases.append(lease)
        future.set_result(RunResult({"y": inputs["x"]}, 1.0, lease=lease))
        return future

    def ping(self, key: str | None = None) -> asyncio.Future[dict[str, Any]]:
        assert key == KEY
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        future.set_result({"id": 9, "ok": True, "pid": 1, "runs": self.runs_seen})
        return future


def _warm_up(worker: Worker, runs: list[WarmupRun], dispatcher: Dispatcher) -> Any:
    return warm_up(worker, worker, KEY, runs, dispatcher)  # type: ignore[arg-type]


def _x(value: float) -> np.ndarray:
    return np.full((1, 2), value, np.float32)


async def test_each_run_is_replayed_its_iterations_and_the_report_is_the_workers_count() -> None:
    with Channel.create(index=4, input_bytes=1 << 12, output_bytes=1 << 15) as channel:
        worker = Worker(channel=channel)
        runs = [
            WarmupRun("serving_default", {"x": _x(1.0)}, ("y",), iterations=2),
            WarmupRun("other", {"x": _x(2.0)}),
        ]
        report = await _warm_up(worker, runs, Dispatcher())
        assert [(s.signature, float(s.inputs["x"][0, 0]), s.outputs) for s in worker.sent] == [
            ("serving_default", 1.0, ["y"]),
            ("serving_default", 1.0, ["y"]),
            ("other", 2.0, None),
        ]
        assert isinstance(report, WarmupReport)
        assert (report.worker, report.runs) == (4, 17)  # as the worker counted them
        assert [lease.refs for lease in worker.leases] == [0, 0, 0]  # outputs never read
        assert channel.outputs_held == 0


async def test_a_failing_required_run_fails_the_warmup_under_its_name() -> None:
    worker = Worker(errors=[None, InvalidArgument("input 'x' has dtype float64")])
    runs = [WarmupRun("", {"x": _x(float(i))}, what=f"warmup record {i}") for i in range(3)]
    with pytest.raises(InvalidArgument, match=r"^warmup record 1: input 'x' has dtype float64$"):
        await _warm_up(worker, runs, Dispatcher())
    assert len(worker.sent) == 2  # nothing after the failure


async def test_a_failing_optional_run_is_logged_and_its_other_iterations_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.worker_pool.warmup_replay"):
        worker = Worker(errors=[InvalidArgument("batch of 8 is too large")])
        runs = [
            WarmupRun("", {"x": _x(8.0)}, iterations=3, what="batch size 8", required=False),
            WarmupRun("", {"x": _x(1.0)}),
        ]
        report = await _warm_up(worker, runs, Dispatcher())
        assert [float(s.inputs["x"][0, 0]) for s in worker.sent] == [8.0, 1.0]
        assert report.runs == 17
    assert "batch size 8 on m:1 failed (ignored): batch of 8 is too large" in caplog.text


async def test_a_full_input_area_waits_for_a_run_to_finish_elsewhere() -> None:
    dispatcher = Dispatcher()
    worker = Worker(full=1, runs_in_flight=1)  # another servable's run holds the room
    replay = asyncio.create_task(_warm_up(worker, [WarmupRun("", {"x": _x(1.0)})], dispatcher))
    await asyncio.wait_for(worker.refused.wait(), 30)
    await settle()
    assert worker.sent == [] and not replay.done()  # not yet: nothing finished
    dispatcher.wake()  # that run finished: room may have freed
    report = await asyncio.wait_for(replay, 30)
    assert len(worker.sent) == 1 and report.runs == 17


async def test_a_batch_that_cannot_fit_even_alone_says_what_to_raise() -> None:
    worker = Worker(full=1, runs_in_flight=0)
    with pytest.raises(
        ResourceExhausted,
        match=r"^warmup request: worker 4 shared-memory input area is full even with nothing "
        r"else in flight \(raise --worker_arena_mb\)$",
    ):
        await _warm_up(worker, [WarmupRun("", {"x": _x(1.0)})], Dispatcher())
