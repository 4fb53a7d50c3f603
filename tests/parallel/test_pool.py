"""The worker pool with real worker processes: respawn after death, hang detection by ping.

Every wait is on the pool's own notifications (``on_change``, ``wait_all_alive``) or on a
request's future, bounded by WAIT_S, which is never reached when things work.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.errors import InvalidArgument, NotFound, Unavailable
from gateway.parallel.hosting import LoadSpec
from gateway.parallel.lease import RunResult
from gateway.parallel.pool import PoolOptions, WorkerPool
from gateway.parallel.run_link import RunLink
from gateway.parallel.warmup import Planner, WarmupRun
from tests.support import onnx_models

WAIT_S = 60.0
KEY = "scaled:1"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(onnx_models.scaled(tmp_path_factory.mktemp("pool") / "model.onnx", 3.0))


def _spec(path: str) -> LoadSpec:
    return LoadSpec(key=KEY, path=path, platform="onnx", intra_op=1, inter_op=1)


def _options(workers: int = 1, **kw: float) -> PoolOptions:
    return PoolOptions(workers=workers, input_bytes=1 << 16, output_bytes=1 << 16, **kw)


def _run(link: RunLink, x: np.ndarray) -> asyncio.Future[RunResult]:
    def fill(name: str, dest: np.ndarray) -> None:
        dest[...] = x

    return link.submit(KEY, {"x": (x.dtype, x.shape)}, fill, None, None)


async def _outputs(run: asyncio.Future[RunResult]) -> dict[str, np.ndarray]:
    """A run's outputs, copied; its output space goes back to the worker."""
    result = await asyncio.wait_for(run, WAIT_S)
    try:
        return {name: array.copy() for name, array in result.outputs.items()}
    finally:
        result.release()


def _link(pool: WorkerPool) -> RunLink:
    link = pool.dispatcher.pick(KEY)
    assert link is not None
    return link


def _with_pool(
    options: PoolOptions, scenario: Callable[[WorkerPool, asyncio.Event], Awaitable[None]]
) -> None:
    """Run ``scenario`` with a started pool; the event is set on each of its notifications."""

    async def main() -> None:
        changed = asyncio.Event()
        pool = WorkerPool(options, on_change=changed.set)
        try:
            await asyncio.wait_for(pool.start(), WAIT_S)
            await scenario(pool, changed)
        finally:
            await pool.close()

    asyncio.run(main())


async def _until(changed: asyncio.Event, condition: Callable[[], bool]) -> None:
    """Wait for the pool's notifications until ``condition()`` holds."""
    async with asyncio.timeout(WAIT_S):
        while not condition():
            changed.clear()
            await changed.wait()


def test_killed_worker_fails_its_runs_and_comes_back_with_its_models(model: str) -> None:
    async def scenario(pool: WorkerPool, changed: asyncio.Event) -> None:
        await pool.load(_spec(model))
        (old_pid,) = pool.pids()
        os.kill(old_pid, signal.SIGSTOP)  # the run below stays in flight
        in_flight = _run(_link(pool), np.ones((1, 2), np.float32))
        os.kill(old_pid, signal.SIGKILL)
        with pytest.raises(Unavailable, match=r"worker 0 exited \(code -9\)"):
            await asyncio.wait_for(in_flight, WAIT_S)
        assert not pool.hosts(KEY)  # dead, not yet replaced
        await asyncio.wait_for(pool.wait_all_alive(), WAIT_S)
        (new_pid,) = pool.pids()
        assert new_pid != old_pid and pool.restarts == 1
        assert pool.hosts(KEY)  # the model was loaded again before the worker counted as alive
        result = await _outputs(_run(_link(pool), np.full((2, 2), 2.0, np.float32)))
        np.testing.assert_array_equal(result["y"], np.full((2, 2), 6.0, np.float32))

    _with_pool(_options(ping_interval_s=3600), scenario)


def test_hung_worker_is_killed_after_an_unanswered_ping_and_replaced(model: str) -> None:
    async def scenario(pool: WorkerPool, changed: asyncio.Event) -> None:
        await pool.load(_spec(model))
        (stuck_pid,) = pool.pids()
        os.kill(stuck_pid, signal.SIGSTOP)  # alive, but answers nothing
        in_flight = _run(_link(pool), np.ones((1, 2), np.float32))
        with pytest.raises(Unavailable, match="exited"):
            await asyncio.wait_for(in_flight, WAIT_S)
        await _until(changed, lambda: pool.restarts >= 1 and pool.all_alive())
        assert pool.pids() != [stuck_pid]
        with pytest.raises(ProcessLookupError):
            os.kill(stuck_pid, 0)  # killed and reaped
        result = await _outputs(_run(_link(pool), np.ones((1, 2), np.float32)))
        np.testing.assert_array_equal(result["y"], [[3.0, 3.0]])

    _with_pool(_options(ping_interval_s=0.1, ping_timeout_s=1.0), scenario)


def test_a_load_that_fails_is_forgotten(model: str, tmp_path: Path) -> None:
    garbage = tmp_path / "model.onnx"
    garbage.write_bytes(b"not a model")

    async def scenario(pool: WorkerPool, changed: asyncio.Event) -> None:
        with pytest.raises(NotFound, match="does not exist"):
            await pool.load(_spec(str(tmp_path / "missing.onnx")))
        with pytest.raises(InvalidArgument, match="cannot load ONNX model"):
            await pool.load(_spec(str(garbage)))
        assert not pool.hosts(KEY)
        await pool.load(_spec(model))
        assert pool.hosts(KEY)

    _with_pool(_options(ping_interval_s=3600), scenario)


def _warmup_runs(records: int, iterations: int) -> Planner:
    async def plan(signature: Mapping[str, Any]) -> list[WarmupRun]:
        assert signature["inputs"][0]["name"] == "x"
        x = np.ones((1, 2), np.float32)
        return [WarmupRun("", {"x": x}, None, iterations, f"record {i}") for i in range(records)]

    return plan


def test_a_servable_placed_on_one_worker_is_warmed_there_and_comes_back_there(
    model: str,
) -> None:
    async def scenario(pool: WorkerPool, changed: asyncio.Event) -> None:
        loaded = await pool.load(
            LoadSpec(KEY, model, "onnx", 1, 1, workers=1), _warmup_runs(records=3, iterations=2)
        )
        (slot,) = pool.placed(KEY)
        holders = [link.index for link in pool.dispatcher.links if KEY in link.routed]
        assert holders == [slot]
        (report,) = loaded.warmup
        assert (report.worker, report.runs) == (slot, 6)  # counted by that worker
        other = await pool.load(LoadSpec("other:1", model, "onnx", 1, 1, workers=1))
        assert pool.placed("other:1") != (slot,)  # the least busy worker gets the next one
        assert other.warmup[0].runs == 0
        for _ in range(4):  # requests go only where the servable is
            assert _link(pool).index == slot
            await _outputs(_run(_link(pool), np.ones((1, 2), np.float32)))
        pid = pool.pids()[slot]
        os.kill(pid, signal.SIGKILL)
        await _until(changed, lambda: pool.restarts == 1 and pool.all_alive())
        assert _link(pool).index == slot
        control = pool.links[slot]
        assert control.pid != pid
        runs = await asyncio.wait_for(control.ping(KEY), WAIT_S)
        assert runs["runs"] == 6  # warmed up again before it took traffic
        assert all(KEY not in x.routed for x in pool.dispatcher.links if x.index != slot)

    _with_pool(_options(ping_interval_s=3600, workers=2), scenario)


def test_a_failing_warmup_fails_the_load_everywhere(model: str) -> None:
    async def bad_plan(signature: Mapping[str, Any]) -> list[WarmupRun]:
        x = np.ones((1, 3), np.float32)  # the model takes [-1, 2]
        return [WarmupRun("", {"x": x}, None, 1, "warmup record 0 (predict_log)")]

    async def scenario(pool: WorkerPool, changed: asyncio.Event) -> None:
        with pytest.raises(InvalidArgument, match=r"^warmup record 0 \(predict_log\): "):
            await pool.load(_spec(model), bad_plan)
        assert not pool.hosts(KEY) and pool.placed(KEY) == ()

    _with_pool(_options(ping_interval_s=3600, workers=2), scenario)
