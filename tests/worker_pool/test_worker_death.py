"""A worker that dies at the worst moment is a load failure or a respawn, never
a raw exception.

The fault is injected at the point of death, not raced for: the one seam is the worker process
(``spawn_worker``). The faulty one reports ready and is gone before the pool reads that report
(its exit and its ``ready`` message are both waiting when the loop next looks), which is how a
worker SIGKILLed just after start left an endpoint marked alive over a closed channel: the next
load or warmup run then raised ``ValueError`` (a closed channel, a released memoryview) that no
caller expected, and the task doing it died.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from channel import messages
from channel.shm.channel import Channel
from gateway.errors import Unavailable
from gateway.runs.dispatcher import Dispatcher
from gateway.worker_pool import process as process_module
from gateway.worker_pool.pool import WorkerPool
from tests.support import onnx_models
from tests.support.pool_runs import KEY, WAIT_S, link, options, outputs, run, spec
from tests.support.waits import until_notified


def _ready_then_dead(channel: Channel) -> subprocess.Popen[bytes]:
    """A worker process that has exited (not yet reaped: the pool's pidfd sees it) by the time
    its ``ready`` message, posted on its behalf, reaches the pool."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    channel.post_completion(messages.encode(messages.ready(process.pid)))
    return process


@pytest.fixture
def faulty_spawns(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The next spawn (only that one) starts a worker that dies as it reports ready; the list
    says how many faulty ones were started (set its first item to arm it)."""
    real = process_module.spawn_worker  # type: ignore[attr-defined]  # patched where it is used
    armed = [0]

    def spawn(channel: Channel, **kwargs: Any) -> subprocess.Popen[bytes]:
        if armed[0] > 0:
            armed[0] -= 1
            return _ready_then_dead(channel)
        return real(channel, **kwargs)

    monkeypatch.setattr(process_module, "spawn_worker", spawn)
    return armed


async def test_a_worker_dead_as_it_reports_ready_fails_the_start_as_unavailable(
    faulty_spawns: list[int],
) -> None:
    """At start: the pool does not report started with a worker it never saw alive."""

    pool = WorkerPool(options(), dispatcher=Dispatcher())
    faulty_spawns[0] = 1
    try:
        with pytest.raises(Unavailable, match=r"^worker 0 exited \(code 0\)$"):
            await asyncio.wait_for(pool.start(), WAIT_S)
    finally:
        await pool.close()


async def test_a_respawned_worker_dead_as_it_reports_ready_is_replaced_again(
    model: str, faulty_spawns: list[int]
) -> None:
    """At run time: the replacement of a killed worker dies as it reports ready; the pool does
    not take it for alive (no task dies of a closed channel), starts another, and that one gets
    the model back."""

    failures: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: failures.append(context))
    changed = asyncio.Event()
    pool = WorkerPool(options(restart_delay_s=0.0), dispatcher=Dispatcher(), on_change=changed.set)
    try:
        await asyncio.wait_for(pool.start(), WAIT_S)
        await asyncio.wait_for(pool.load(spec(model)), WAIT_S)
        faulty_spawns[0] = 1
        (first,) = pool.pids()
        os.kill(first, signal.SIGKILL)
        await until_notified(
            changed,
            lambda: faulty_spawns[0] == 0 and pool.hosts(KEY),
            "the model hosted again, without the faulty spawn",
        )
        result = await outputs(run(link(pool), np.ones((1, 2), np.float32)))
        np.testing.assert_array_equal(result["y"], np.full((1, 2), 3.0, np.float32))
        assert pool.restarts == 2  # the killed worker, then the one dead at its start
    finally:
        await pool.close()
    assert [c.get("exception") for c in failures] == []


async def test_a_replacement_that_cannot_load_a_servable_serves_without_it(tmp_path: Path) -> None:
    """The model file went away before the worker died: its replacement starts all the same
    (before: killed and respawned without end), logs the failure and is not routed that key."""
    path = str(onnx_models.scaled(tmp_path / "model.onnx", 3.0))

    changed = asyncio.Event()
    pool = WorkerPool(options(restart_delay_s=0.0), dispatcher=Dispatcher(), on_change=changed.set)
    try:
        await asyncio.wait_for(pool.start(), WAIT_S)
        await asyncio.wait_for(pool.load(spec(path)), WAIT_S)
        os.remove(path)
        (first,) = pool.pids()
        os.kill(first, signal.SIGKILL)
        await until_notified(
            changed, lambda: pool.restarts >= 1 and pool.all_alive(), "the worker restarted"
        )
        assert pool.pids() != [first] and not pool.hosts(KEY)
        assert pool.restarts == 1  # the replacement stays
    finally:
        await pool.close()
