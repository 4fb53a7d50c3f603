"""A started worker pool in the test's loop, and runs of the ``scaled`` model (y = 3x) over it.

Every wait is on the pool's own notifications (``on_change``, ``wait_all_alive``) or on a
request's future, bounded by WAIT_S, which is never reached when things work.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np

from gateway.runs.dispatcher import Dispatcher
from gateway.worker_channel.lease import RunResult
from gateway.worker_channel.run_link import RunLink
from gateway.worker_pool.hosting import LoadSpec
from gateway.worker_pool.pool import PoolOptions, WorkerPool

WAIT_S = 60.0
KEY = "scaled:1"


def spec(path: str) -> LoadSpec:
    return LoadSpec(key=KEY, path=path, platform="onnx", intra_op=1, inter_op=1)


def options(workers: int = 1, **kw: Any) -> PoolOptions:
    return PoolOptions(workers=workers, input_bytes=1 << 16, output_bytes=1 << 16, **kw)


def run(link: RunLink, x: np.ndarray) -> asyncio.Future[RunResult]:
    def fill(name: str, dest: np.ndarray) -> None:
        dest[...] = x

    return link.submit(KEY, {"x": (x.dtype, x.shape)}, fill, None, None)


async def outputs(run: asyncio.Future[RunResult]) -> dict[str, np.ndarray]:
    """A run's outputs, copied; its output space goes back to the worker."""
    result = await asyncio.wait_for(run, WAIT_S)
    try:
        return {name: array.copy() for name, array in result.outputs.items()}
    finally:
        result.release()


def dispatcher_of(pool: WorkerPool) -> Dispatcher:
    """The dispatcher ``pool`` reports its workers to (every pool here is given one)."""
    dispatcher = pool.dispatcher
    assert isinstance(dispatcher, Dispatcher)
    return dispatcher


def link(pool: WorkerPool) -> RunLink:
    """The run link the dispatcher picks for ``KEY`` now."""
    picked = dispatcher_of(pool).pick(KEY)
    assert isinstance(picked, RunLink)
    return picked


@asynccontextmanager
async def started_pool(options: PoolOptions) -> AsyncIterator[tuple[WorkerPool, asyncio.Event]]:
    """A started pool, and an event set on each of its notifications (closed at the end)."""
    changed = asyncio.Event()
    pool = WorkerPool(options, dispatcher=Dispatcher(), on_change=changed.set)
    try:
        await asyncio.wait_for(pool.start(), WAIT_S)
        yield pool, changed
    finally:
        await pool.close()
