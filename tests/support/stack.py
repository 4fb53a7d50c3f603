"""The serving stack in the test's own process: real worker processes, models, queues and core,
built as the gateway builds them (:func:`gateway.roles.build`), without the gRPC/REST servers
(tests add the surfaces they drive)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

from gateway.batching.policy import BatchingPolicy
from gateway.config.batching_options import BatchingOptions
from gateway.config.model_config import ModelSpecConfig
from gateway.roles import Options, Stack, build
from gateway.worker_pool.pool import PoolOptions, WorkerPool

ARENA_BYTES = 2**22


@contextlib.asynccontextmanager
async def serving_stack(
    specs: Sequence[ModelSpecConfig],
    *,
    workers: int = 1,
    batching: BatchingOptions | None = None,
    arena_bytes: int = ARENA_BYTES,
) -> AsyncIterator[Stack[WorkerPool]]:
    """Start ``workers`` worker processes, load ``specs`` and yield the stack; stop the workers
    on exit. ``batching``: the options of every queue (None: unbatched)."""
    options = Options(
        pool=PoolOptions(workers=workers, input_bytes=arena_bytes, output_bytes=arena_bytes),
        batching=BatchingPolicy(batching or BatchingOptions.unbatched(), workers),
    )
    stack = build(options, specs)
    await stack.pool.start()
    try:
        await stack.models.reconcile()
        yield stack
    finally:
        await stack.models.close()
        await stack.pool.close()
