"""The server's batch queues: one per (servable, signature), made on first use with the policy's
options and the observer's hook; drained and forgotten before an unload; flushed and failed at
shutdown. Fake worker links at the one seam."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.batching.policy import BatchingPolicy
from gateway.batching.queues import BatchQueues
from gateway.config.batching_options import BatchingOptions
from gateway.errors import FailedPrecondition, Unavailable
from gateway.serving.registry import Servable
from tests.support.fakes import fake_dispatcher
from tests.support.idle_loop import settle

X = np.ones((1, 2), np.float32)


def _servable(version: int = 1, directory: str = "") -> Servable:
    return Servable("m", version, f"m:{version}", "onnx", {}, directory)


def test_a_queue_per_servable_and_signature_made_once_with_the_policys_options() -> None:
    seen: list[tuple[str, str]] = []
    dispatcher, _ = fake_dispatcher()
    options = BatchingOptions(max_batch_size=8, batch_timeout_micros=500)
    queues: BatchQueues[Any] = BatchQueues(
        BatchingPolicy(options, workers=3),
        dispatcher,
        observer=lambda servable, name: seen.append((servable.key, name)),
    )
    first = queues.get(_servable(), "serving_default")
    assert queues.get(_servable(), "serving_default") is first
    other = queues.get(_servable(), "classify")
    assert other is not first and queues.get(_servable(2), "classify") is not other
    assert seen == [("m:1", "serving_default"), ("m:1", "classify"), ("m:2", "classify")]
    assert first.options.max_batch_size == 8 and first.options.num_batch_threads == 3
    assert (first.servable_key, first.signature) == ("m:1", "serving_default")


def test_a_bad_per_model_batching_file_fails_the_request_not_the_server(tmp_path: Path) -> None:
    (tmp_path / "batching_params.pbtxt").write_text("max_batch_size { value: -1 }")
    dispatcher, _ = fake_dispatcher()
    policy = BatchingPolicy(BatchingOptions(), workers=1, per_model=True)
    queues: BatchQueues[Any] = BatchQueues(policy, dispatcher)
    with pytest.raises(FailedPrecondition):
        queues.get(_servable(directory=str(tmp_path)), "serving_default")


async def test_drain_runs_what_is_queued_then_forgets_the_servables_queues() -> None:
    dispatcher, (link,) = fake_dispatcher()
    queues: BatchQueues[Any] = BatchQueues(
        BatchingPolicy(BatchingOptions.unbatched(), 1), dispatcher
    )
    queue = queues.get(_servable(), "serving_default")
    kept = queues.get(_servable(2), "serving_default")
    call = asyncio.create_task(queue.submit({"x": X}, ("y",), None))
    await settle()
    draining = asyncio.create_task(queues.drain(_servable()))
    await settle()
    assert not draining.done()  # its run is still in flight
    link.complete(0, lambda inputs: {"y": inputs["x"]})
    await draining
    (await call).release()
    assert queues.get(_servable(), "serving_default") is not queue  # forgotten
    assert queues.get(_servable(2), "serving_default") is kept


async def test_flush_sends_open_batches_and_fail_all_fails_what_is_queued() -> None:
    dispatcher, (link,) = fake_dispatcher()
    options = BatchingOptions(max_batch_size=8, batch_timeout_micros=10**9, num_batch_threads=1)
    queues: BatchQueues[Any] = BatchQueues(BatchingPolicy(options, 1), dispatcher)
    queue = queues.get(_servable(), "serving_default")
    first = asyncio.create_task(queue.submit({"x": X}, ("y",), None))
    await settle()
    assert link.sent == []  # the batch waits for its (long) timeout
    queues.flush()
    await settle()
    assert len(link.sent) == 1
    second = asyncio.create_task(queue.submit({"x": X}, ("y",), None))
    await settle()
    queues.fail_all(Unavailable("the server is shutting down"))
    for call in (first, second):
        with pytest.raises(Unavailable, match="shutting down"):
            await call
