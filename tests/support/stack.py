"""The serving stack in the test's own process: real worker processes, models, queues and core,
without the gRPC/REST servers (tests add the surfaces they drive)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from gateway.config.batching_options import BatchingOptions
from gateway.config.model_config import ModelSpecConfig
from gateway.models.manager import ModelManager
from gateway.parallel.pool import PoolOptions, WorkerPool
from gateway.serving.core import ServingCore
from gateway.serving.policy import BatchingPolicy
from gateway.serving.queues import BatchQueues

ARENA_BYTES = 2**22


@dataclass
class Stack:
    pool: WorkerPool
    models: ModelManager
    queues: BatchQueues
    core: ServingCore


@contextlib.asynccontextmanager
async def serving_stack(
    specs: Sequence[ModelSpecConfig],
    *,
    workers: int = 1,
    batching: BatchingOptions | None = None,
    arena_bytes: int = ARENA_BYTES,
) -> AsyncIterator[Stack]:
    """Start ``workers`` worker processes, load ``specs`` and yield the stack; stop the workers
    on exit. ``batching``: the options of every queue (None: unbatched)."""
    pool = WorkerPool(
        PoolOptions(workers=workers, input_bytes=arena_bytes, output_bytes=arena_bytes)
    )
    await pool.start()
    try:
        policy = BatchingPolicy(batching or BatchingOptions.unbatched(), workers)
        queues = BatchQueues(policy, pool.dispatcher)
        models = ModelManager(pool, specs, intra_op=1, inter_op=1, before_unload=queues.drain)
        await models.reconcile()
        yield Stack(pool, models, queues, ServingCore(models, queues))
    finally:
        await pool.close()
