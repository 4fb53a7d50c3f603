"""Handing a run's rows to its requests, and reassembling split requests, without losing the
lease references the rows hold.

A task's future resolves with :class:`~gateway.parallel.lease.Outputs` holding one reference on
its run's output space (awaited with :func:`~gateway.parallel.lease.take`). A reference is never
held while waiting for another run: a split request's chunks are copied into the request's own
arrays as each arrives (see :mod:`gateway.parallel.lease`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from gateway.batching import merge
from gateway.batching.queue import Task
from gateway.parallel.dispatcher import RunResult
from gateway.parallel.lease import Outputs, release_result


def hand_out(tasks: Sequence[Task], run: RunResult, padded: int, *, solo: bool) -> None:
    """Give each task still waiting its rows of ``run`` (views), each with one lease reference,
    then return the run's own reference: padding rows and tasks that left hold none. Internal
    (from :func:`merge.split_outputs`) when the outputs lost the batch dimension."""
    try:
        sizes = [t.size for t in tasks]
        per_task = [run.outputs] if solo else merge.split_outputs(run.outputs, sizes, padded)
        lease = run.lease
        for task, outs in zip(tasks, per_task, strict=True):
            if not task.future.done():
                rows = {name: outs[name] for name in task.outputs}
                task.future.set_result(Outputs(rows, None if lease is None else lease.acquire()))
    finally:
        run.release()


async def gather_chunks(futures: list[asyncio.Future[Outputs]], sizes: list[int]) -> Outputs:
    """Await a split request's chunks (``sizes`` rows each) in order, copying each into the
    request's own arrays and returning its reference at once: a chunk held while a later one
    waits could keep the worker from writing that very chunk. On any failure cancel the chunks
    still waiting (they leave) and return the references of those that resolved."""
    arrays: dict[str, np.ndarray] = {}
    row, rows = 0, sum(sizes)
    try:
        for future, size in zip(futures, sizes, strict=True):
            chunk = await future
            try:
                for name, part in chunk.items():
                    if name not in arrays:
                        arrays[name] = np.empty((rows, *part.shape[1:]), part.dtype)
                    arrays[name][row : row + size] = part
            finally:
                chunk.release()
            row += size
    except BaseException:
        for future in futures:
            if future.done():
                release_result(future)
            else:
                future.cancel()
        raise
    return Outputs(arrays)
