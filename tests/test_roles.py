"""The one composition of the serving parts: options from the flags, and the wires between the
supervisor's parts and the front end's (fake pool and fake worker links at the two seams)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from gateway.batching.policy import BatchingPolicy
from gateway.config.batching_options import BatchingOptions
from gateway.config.model_config import ModelSpecConfig
from gateway.config.settings import Settings
from gateway.roles import Options, build
from gateway.serving.core import ModelRef, PredictResult
from gateway.serving.inputs import ConvertedInputs
from gateway.serving.registry import State
from gateway.worker_pool.pool import PoolOptions, WorkerPool
from tests.support.fakes import FakePool, fake_dispatcher
from tests.support.idle_loop import settle

X = np.ones((1, 4), np.float32)


def _options(batching: BatchingOptions | None = None) -> Options:
    return Options(
        pool=PoolOptions(workers=1, input_bytes=1 << 16, output_bytes=1 << 16),
        batching=BatchingPolicy(batching or BatchingOptions.unbatched(), 1, per_model=True),
    )


def _versions(base: Path, *numbers: int) -> ModelSpecConfig:
    for n in numbers:
        (base / str(n)).mkdir(parents=True)
        (base / str(n) / "model.onnx").write_bytes(b"onnx")
    return ModelSpecConfig(base.name, str(base))


def test_options_from_the_flags() -> None:
    settings = Settings(
        model_base_path="/models/m",
        workers=1,
        tensorflow_intra_op_parallelism=2,
        worker_arena_mb=8,
        worker_ping_interval_seconds=1.5,
        worker_ping_timeout_seconds=9.0,
        log_format="json",
        saved_model_tags="serve,gpu",
        enable_batching=True,
        max_num_load_retries=2,
        max_inflight_bytes=1 << 20,
        max_queue_delay_ms=40,
    )
    specs = [ModelSpecConfig("m", "/models/m")]
    options = Options.from_settings(settings, specs)
    assert options.pool == PoolOptions(
        workers=1,
        input_bytes=8 << 20,
        output_bytes=8 << 20,
        ping_interval_s=1.5,
        ping_timeout_s=9.0,
        log_format="json",
    )
    assert (options.intra_op, options.inter_op) == (2, 1)
    assert options.saved_model_tags == ("gpu", "serve")
    assert options.load.retries == 2 and options.inflight_bytes == 1 << 20
    assert options.batching.workers == 1 and not options.batching.options.solo
    assert options.batching.max_queue_delay_s == 0.04


def test_by_default_the_pool_attaches_its_workers_to_the_front_ends_dispatcher() -> None:
    stack = build(_options(), [])
    assert isinstance(stack.pool, WorkerPool)
    assert stack.pool.dispatcher is stack.dispatcher
    assert stack.pool.pids() == []  # nothing is started
    assert stack.core.models is stack.models and stack.core.queues is stack.queues


async def test_the_core_reads_the_models_and_a_dropped_model_drains_its_queue_before_unloading(
    tmp_path: Path,
) -> None:
    spec = _versions(tmp_path / "m", 1)
    dispatcher, (link,) = fake_dispatcher()
    pool = FakePool()
    stack = build(_options(), [spec], workers=pool, dispatcher=dispatcher)
    await stack.models.reconcile()
    assert stack.core.ready() and stack.core.servable(ModelRef("m")).key == "m:1"
    call = asyncio.create_task(
        stack.core.predict(ModelRef("m"), "", lambda _s: ConvertedInputs({"x": X}), _shape)
    )
    await settle()
    assert len(link.sent) == 1  # queued through the front end's dispatcher
    dropping = asyncio.create_task(stack.models.apply([]))
    await settle()
    assert [s.state for s in stack.models.statuses("m")] == [State.UNLOADING]
    assert ("unload", "m:1") not in pool.calls  # its queue drains first
    link.complete(0, lambda inputs: {"y": inputs["x"]})
    await asyncio.wait_for(dropping, 30)
    assert await call == (1, 4)
    assert pool.calls[-1] == ("unload", "m:1") and stack.models.specs() == []


async def test_a_version_whose_batching_file_is_bad_fails_before_it_loads(tmp_path: Path) -> None:
    spec = _versions(tmp_path / "m", 1)
    (tmp_path / "m" / "1" / "batching_params.pbtxt").write_text("max_batch_size { value: 0 }")
    pool = FakePool()
    dispatcher, _ = fake_dispatcher()
    stack = build(_options(BatchingOptions()), [spec], workers=pool, dispatcher=dispatcher)
    await stack.models.reconcile()
    (status,) = stack.models.statuses("m")
    assert status.state == State.END and status.error is not None
    assert pool.calls == []  # refused by the policy's check, never sent to a worker


def _shape(result: PredictResult) -> tuple[int, ...]:
    return tuple(result.outputs["y"].shape)
