"""The worker pool with real worker processes: respawn after death, hang detection by ping.

Every wait is on the pool's own notifications (``on_change``, ``wait_all_alive``) or on a
request's future, bounded by WAIT_S, which is never reached when things work.
"""

from __future__ import annotations

import asyncio
import os
import signal

import numpy as np
import pytest

from gateway.errors import Unavailable
from tests.support.pool_runs import (
    KEY,
    WAIT_S,
    link,
    options,
    outputs,
    run,
    spec,
    started_pool,
)
from tests.support.waits import until_notified


async def test_killed_worker_fails_its_runs_and_comes_back_with_its_models(model: str) -> None:
    async with started_pool(options(ping_interval_s=3600)) as (pool, _changed):
        await pool.load(spec(model))
        (old_pid,) = pool.pids()
        os.kill(old_pid, signal.SIGSTOP)  # the run below stays in flight
        in_flight = run(link(pool), np.ones((1, 2), np.float32))
        os.kill(old_pid, signal.SIGKILL)
        with pytest.raises(Unavailable, match=r"worker 0 exited \(code -9\)"):
            await asyncio.wait_for(in_flight, WAIT_S)
        assert not pool.hosts(KEY)  # dead, not yet replaced
        await asyncio.wait_for(pool.wait_all_alive(), WAIT_S)
        (new_pid,) = pool.pids()
        assert new_pid != old_pid and pool.restarts == 1
        assert pool.hosts(KEY)  # the model was loaded again before the worker counted as alive
        result = await outputs(run(link(pool), np.full((2, 2), 2.0, np.float32)))
        np.testing.assert_array_equal(result["y"], np.full((2, 2), 6.0, np.float32))


async def test_hung_worker_is_killed_after_an_unanswered_ping_and_replaced(model: str) -> None:
    async with started_pool(options(ping_interval_s=0.1, ping_timeout_s=1.0)) as (pool, changed):
        await pool.load(spec(model))
        (stuck_pid,) = pool.pids()
        os.kill(stuck_pid, signal.SIGSTOP)  # alive, but answers nothing
        in_flight = run(link(pool), np.ones((1, 2), np.float32))
        with pytest.raises(Unavailable, match="exited"):
            await asyncio.wait_for(in_flight, WAIT_S)
        await until_notified(
            changed, lambda: pool.restarts >= 1 and pool.all_alive(), "the worker restarted"
        )
        assert pool.pids() != [stuck_pid]
        with pytest.raises(ProcessLookupError):
            os.kill(stuck_pid, 0)  # killed and reaped
        result = await outputs(run(link(pool), np.ones((1, 2), np.float32)))
        np.testing.assert_array_equal(result["y"], [[3.0, 3.0]])
