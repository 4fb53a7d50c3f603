"""With real workers: a worker SIGKILLed while it replays a version's warmup.

The kill is injected at the point of death — while the 30th warmup run is being written into a
worker's input area (a hook in the run's inputs), waiting until the process is gone — not raced
for with a timer. The load then fails as a load failure (UNAVAILABLE), is retried per
``--max_num_load_retries`` on the worker still alive, and the version serves; the killed worker's
replacement gets the version back, warmed up.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.models.loader import LoadOptions
from gateway.models.manager import ModelManager
from gateway.runs.dispatcher import Dispatcher
from gateway.serving.registry import Servable, State
from gateway.worker_channel.warmup_runs import WarmupRun
from gateway.worker_pool.pool import WorkerPool
from tests.support import onnx_models
from tests.support.pool_runs import WAIT_S, options, outputs

KEY = "scaled:1"


class KillAt(Mapping[str, np.ndarray]):
    """Warmup inputs that SIGKILL worker 0 of ``pool`` the ``at``-th time they are read (once),
    and return only when it is dead (not yet reaped: the pool sees its exit as it would)."""

    def __init__(self, pool: WorkerPool, at: int) -> None:
        self._pool = pool
        self._left = at
        self._x = np.ones((1, 2), np.float32)
        self.killed: int | None = None

    def __getitem__(self, name: str) -> np.ndarray:
        self._left -= 1
        if self._left == 0:
            self.killed = self._pool.pids()[0]
            os.kill(self.killed, signal.SIGKILL)
            os.waitid(os.P_PID, self.killed, os.WEXITED | os.WNOWAIT)
        return {"x": self._x}[name]

    def __iter__(self) -> Iterator[str]:
        return iter(("x",))

    def __len__(self) -> int:
        return 1


async def test_a_worker_killed_during_warmup_fails_that_attempt_and_the_retry_serves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    onnx_models.scaled(tmp_path / "scaled" / "1" / "model.onnx", 3.0)
    spec = ModelSpecConfig("scaled", str(tmp_path / "scaled"))

    dispatcher = Dispatcher()
    pool = WorkerPool(options(workers=2, restart_delay_s=0.0), dispatcher=dispatcher)
    inputs = KillAt(pool, at=30)

    async def warmup(servable: Servable) -> list[WarmupRun]:
        return [WarmupRun("serving_default", inputs, iterations=25) for _ in range(4)]

    models = ModelManager(
        pool,
        [spec],
        intra_op=1,
        inter_op=1,
        options=LoadOptions(retries=1),
        warmup=warmup,
    )
    try:
        await asyncio.wait_for(pool.start(), WAIT_S)
        await asyncio.wait_for(models.reconcile(), WAIT_S)
        assert inputs.killed is not None
        (status,) = models.statuses("scaled")
        assert (status.state, status.error) == (State.AVAILABLE, None)
        await asyncio.wait_for(pool.wait_all_alive(), WAIT_S)
        assert inputs.killed not in pool.pids() and pool.hosts(KEY)
        for link in dispatcher.links:  # both workers serve it: the replacement too
            assert KEY in link.routed
            result = await outputs(link.submit(KEY, {"x": (np.dtype(np.float32), (1, 2))},
                                               _fill, None, None))  # fmt: skip
            np.testing.assert_array_equal(result["y"], np.full((1, 2), 3.0, np.float32))
    finally:
        await models.close()
        await pool.close()
    retried = [r.getMessage() for r in caplog.records if "attempt 1 of 2" in r.getMessage()]
    assert len(retried) == 1 and "worker 0 exited (code -9)" in retried[0]


def _fill(name: str, dest: np.ndarray) -> None:
    dest[...] = 1.0
