"""Hosting servables on real worker processes: a failed load is forgotten, a placed servable is
warmed up on its workers before it is routed there and comes back there after a respawn, a failing
warmup fails the load everywhere."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.errors import InvalidArgument, NotFound
from gateway.worker_channel.warmup_runs import Planner, WarmupRun
from gateway.worker_pool.hosting import LoadSpec
from tests.support.pool_runs import (
    KEY,
    WAIT_S,
    dispatcher_of,
    link,
    options,
    outputs,
    run,
    spec,
    started_pool,
)
from tests.support.waits import until_notified


async def test_a_load_that_fails_is_forgotten(model: str, tmp_path: Path) -> None:
    garbage = tmp_path / "model.onnx"
    garbage.write_bytes(b"not a model")

    async with started_pool(options(ping_interval_s=3600)) as (pool, _changed):
        with pytest.raises(NotFound, match="does not exist"):
            await pool.load(spec(str(tmp_path / "missing.onnx")))
        with pytest.raises(InvalidArgument, match="cannot load ONNX model"):
            await pool.load(spec(str(garbage)))
        assert not pool.hosts(KEY)
        await pool.load(spec(model))
        assert pool.hosts(KEY)


def _warmup_runs(records: int, iterations: int) -> Planner:
    async def plan(signature: Mapping[str, Any]) -> list[WarmupRun]:
        assert signature["inputs"][0]["name"] == "x"
        x = np.ones((1, 2), np.float32)
        return [WarmupRun("", {"x": x}, None, iterations, f"record {i}") for i in range(records)]

    return plan


async def test_a_servable_placed_on_one_worker_is_warmed_there_and_comes_back_there(
    model: str,
) -> None:
    async with started_pool(options(ping_interval_s=3600, workers=2)) as (pool, changed):
        loaded = await pool.load(
            LoadSpec(KEY, model, "onnx", 1, 1, workers=1), _warmup_runs(records=3, iterations=2)
        )
        (slot,) = pool.placed(KEY)
        holders = [link.index for link in dispatcher_of(pool).links if KEY in link.routed]
        assert holders == [slot]
        (report,) = loaded.warmup
        assert (report.worker, report.runs) == (slot, 6)  # counted by that worker
        other = await pool.load(LoadSpec("other:1", model, "onnx", 1, 1, workers=1))
        assert pool.placed("other:1") != (slot,)  # the least busy worker gets the next one
        assert other.warmup[0].runs == 0
        for _ in range(4):  # requests go only where the servable is
            assert link(pool).index == slot
            await outputs(run(link(pool), np.ones((1, 2), np.float32)))
        pid = pool.pids()[slot]
        os.kill(pid, signal.SIGKILL)
        await until_notified(
            changed, lambda: pool.restarts == 1 and pool.all_alive(), "the worker restarted"
        )
        assert link(pool).index == slot
        control = pool.links[slot]
        assert control.pid != pid
        runs = await asyncio.wait_for(control.ping(KEY), WAIT_S)
        assert runs["runs"] == 6  # warmed up again before it took traffic
        assert all(KEY not in x.routed for x in dispatcher_of(pool).links if x.index != slot)


async def test_a_failing_warmup_fails_the_load_everywhere(model: str) -> None:
    async def bad_plan(signature: Mapping[str, Any]) -> list[WarmupRun]:
        x = np.ones((1, 3), np.float32)  # the model takes [-1, 2]
        return [WarmupRun("", {"x": x}, None, 1, "warmup record 0 (predict_log)")]

    async with started_pool(options(ping_interval_s=3600, workers=2)) as (pool, _changed):
        with pytest.raises(InvalidArgument, match=r"^warmup record 0 \(predict_log\): "):
            await pool.load(spec(model), bad_plan)
        assert not pool.hosts(KEY) and pool.placed(KEY) == ()
