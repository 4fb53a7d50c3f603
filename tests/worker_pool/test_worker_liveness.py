"""Noticing a stuck worker: an unanswered ping kills it, a hung run retires it with the reason.
Fake workers at the one seam (no processes); each wait is on what the fake records."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from gateway.errors import ServingError, Unavailable
from gateway.tasks import Tasks
from gateway.worker_channel.watchdog import HangPolicy
from gateway.worker_pool.worker_liveness import Liveness
from tests.support.fakes import fake_dispatcher
from tests.support.idle_loop import settle

WAIT_S = 30.0


@dataclass
class FakeControl:
    """Answers pings at once, or never (``stuck``)."""

    stuck: bool = False
    pings: int = 0

    def ping(self) -> asyncio.Future[dict[str, Any]]:
        self.pings += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if not self.stuck:
            future.set_result({"id": self.pings, "ok": True, "pid": 1})
        return future


@dataclass(eq=False)
class FakeWorker:
    """A worker process that dies when killed: it is live no more, nor is its run link."""

    index: int
    control: FakeControl = field(default_factory=FakeControl)
    pid: int = 1000
    alive: bool = True
    link: Any = None
    ends: list[str] = field(default_factory=list)
    retired: list[ServingError] = field(default_factory=list)
    gone: asyncio.Event = field(default_factory=asyncio.Event)

    def kill(self) -> None:
        self.ends.append("killed")
        self.alive = False
        if self.link is not None:
            self.link.alive = False
        self.gone.set()

    def retire(self, error: ServingError) -> None:
        self.retired.append(error)
        self.kill()


def _liveness(workers: list[FakeWorker], **timing: Any) -> tuple[Liveness, Any, Tasks]:
    dispatcher, links = fake_dispatcher(len(workers), max_in_flight=4)
    tasks = Tasks(logging.getLogger(__name__))

    options: dict[str, Any] = {"ping_interval_s": 3600.0, "ping_timeout_s": 3600.0}
    options["hang"] = HangPolicy(check_s=3600.0)
    options.update(timing)
    for worker, link in zip(workers, links, strict=True):
        worker.link = link

    def live() -> list[Any]:
        return [w for w in workers if w.alive]

    liveness = Liveness(live, dispatcher, tasks=tasks, **options)
    return liveness, (dispatcher, links), tasks


async def _stop(*tasks: asyncio.Task[None]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_worker_that_does_not_answer_its_ping_in_time_is_killed() -> None:
    fine, stuck = FakeWorker(0), FakeWorker(1, FakeControl(stuck=True))
    liveness, _, pings = _liveness([fine, stuck], ping_interval_s=0.0, ping_timeout_s=0.001)
    loop = asyncio.get_running_loop().create_task(liveness.pings())
    await asyncio.wait_for(stuck.gone.wait(), WAIT_S)
    await _stop(loop)
    await pings.close()
    assert set(stuck.ends) == {"killed"} and stuck.retired == []
    assert fine.ends == [] and fine.control.pings >= 1


async def test_a_worker_whose_run_is_hung_is_retired_with_the_reason() -> None:
    workers = [FakeWorker(0), FakeWorker(1)]
    liveness, (dispatcher, links), _ = _liveness(workers, hang=HangPolicy(check_s=0.0))
    dispatcher.run_times.record("m:1", rows=2, seconds=0.001)
    layout = {"x": (np.dtype(np.float32), (2, 2))}
    links[1].submit("m:1", layout, lambda name, dest: None, None, None)  # since long ago
    watch = asyncio.get_running_loop().create_task(liveness.watch())
    await asyncio.wait_for(workers[1].gone.wait(), WAIT_S)
    await _stop(watch)
    (error,) = workers[1].retired
    assert isinstance(error, Unavailable)
    assert error.message.startswith("worker 1 stopped answering: a run of m:1 (2 rows)")
    assert workers[0].ends == []


@pytest.mark.parametrize("stuck", [False, True])
async def test_nothing_happens_between_checks(stuck: bool) -> None:
    worker = FakeWorker(0, FakeControl(stuck=stuck))
    liveness, _, pings = _liveness([worker])
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(c) for c in (liveness.pings(), liveness.watch())]
    await settle()
    await _stop(*tasks)
    await pings.close()
    assert worker.control.pings == 0 and worker.ends == []
