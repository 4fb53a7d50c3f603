"""Loading one version: the check before each attempt, what the workers are asked to load, the
servable built from their reply, and the retries (with a fake pool at the one seam)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.config.model_runtimes import RuntimeChoice
from gateway.config.settings import Settings
from gateway.errors import FailedPrecondition, NotFound
from gateway.models.loader import LoadOptions, VersionLoader
from gateway.serving.registry import Servable
from gateway.worker_channel.warmup_runs import WarmupRun
from tests.support.fakes import FakePool
from tests.support.idle_loop import settle

WAIT_S = 30.0


def _version(base: Path, version: int = 3) -> str:
    directory = base / str(version)
    directory.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(b"onnx")
    return str(directory)


async def test_the_workers_load_what_the_version_folder_and_options_say(tmp_path: Path) -> None:
    directory = _version(tmp_path)
    pool = FakePool()
    warmed: list[Servable] = []

    async def warmup(servable: Servable) -> list[WarmupRun]:
        warmed.append(servable)
        return [WarmupRun("serving_default", {"x": np.zeros((1, 4), np.float32)}, iterations=2)]

    loader = VersionLoader(
        pool,
        intra_op=2,
        inter_op=1,
        tags=("serve", "gpu"),
        options=LoadOptions(placement={"m": 1}),
        warmup=warmup,
    )
    spec = ModelSpecConfig("m", str(tmp_path))
    servable, reports = await loader.load(spec, 3, directory, asyncio.Event())
    load = pool.specs["m:3"]
    assert (load.path, load.platform, load.intra_op, load.inter_op) == (
        f"{directory}/model.onnx",
        "onnx",
        2,
        1,
    )
    assert (load.tags, load.workers) == (("serve", "gpu"), 1)
    assert (servable.model, servable.version, servable.key, servable.platform) == (
        "m",
        3,
        "m:3",
        "onnx",
    )
    assert servable.directory == directory and list(servable.signatures) == ["serving_default"]
    assert warmed == [servable] and pool.warmed["m:3"] == 2
    assert [r.runs for r in reports] == [2]


async def test_the_check_before_load_can_refuse_an_attempt(tmp_path: Path) -> None:
    directory = _version(tmp_path)
    pool = FakePool()
    checked: list[tuple[str, int, str]] = []

    def before_load(model: str, version: int, folder: str) -> None:
        checked.append((model, version, folder))
        raise FailedPrecondition("bad batching_params.pbtxt")

    loader = VersionLoader(pool, 1, 1, before_load=before_load)
    with pytest.raises(FailedPrecondition, match=r"bad batching_params\.pbtxt"):
        await loader.load(ModelSpecConfig("m", str(tmp_path)), 3, directory, asyncio.Event())
    assert checked == [("m", 3, directory)] and pool.calls == []


class Failing(FakePool):
    """Each load fails with the next of ``errors``."""

    def __init__(self, *errors: NotFound) -> None:
        super().__init__()
        self.errors = list(errors)

    async def load(self, spec: Any, warmup: Any = None) -> Any:
        self.calls.append(("load", spec.key))
        raise self.errors.pop(0)


async def test_a_failed_load_is_retried_then_its_last_error_stands(tmp_path: Path) -> None:
    directory = _version(tmp_path)
    pool = Failing(NotFound("first"), NotFound("second"), NotFound("third"))
    loader = VersionLoader(pool, 1, 1, options=LoadOptions(retries=2))
    spec = ModelSpecConfig("m", str(tmp_path))
    with pytest.raises(NotFound, match=r"^third$"):
        await loader.load(spec, 3, directory, asyncio.Event())
    assert pool.calls == [("load", "m:3")] * 3  # 1 + retries


async def test_a_superseded_model_stops_waiting_to_retry(tmp_path: Path) -> None:
    directory = _version(tmp_path)
    pool = FakePool(fail={"m:3": NotFound("corrupt")})
    options = LoadOptions(retries=5, retry_interval_s=3600.0)
    loader = VersionLoader(pool, 1, 1, options=options)

    superseded = asyncio.Event()
    spec = ModelSpecConfig("m", str(tmp_path))
    loading = asyncio.create_task(loader.load(spec, 3, directory, superseded))
    await settle()
    assert pool.calls == [("load", "m:3")] and not loading.done()  # waits an hour to retry
    superseded.set()
    with pytest.raises(NotFound, match="corrupt"):
        await asyncio.wait_for(loading, WAIT_S)
    assert pool.calls == [("load", "m:3")]


def test_load_options_from_the_flags() -> None:
    settings = Settings(
        model_base_path="/m",
        max_num_load_retries=4,
        load_retry_interval_micros=250_000,
        allow_version_labels_for_unavailable_models=True,
        model_workers="big=1,*=2",
    )
    options = LoadOptions.from_settings(settings)
    assert (options.retries, options.retry_interval_s, options.allow_unavailable_labels) == (
        4,
        0.25,
        True,
    )
    assert dict(options.placement) == {"big": 1, "*": 2}
    negative = Settings(model_base_path="/m", load_retry_interval_micros=-5)
    assert LoadOptions.from_settings(negative).retry_interval_s == 0.0


async def test_the_runtime_flag_reaches_the_workers(tmp_path: Path) -> None:
    directory = _version(tmp_path)
    pool = FakePool()
    runtimes = Settings(
        model_base_path="/m", model_runtimes="m=openvino:bf16"
    ).model_runtime_choices
    loader = VersionLoader(pool, intra_op=1, inter_op=1, options=LoadOptions(runtimes=runtimes))
    await loader.load(ModelSpecConfig("m", str(tmp_path)), 3, directory, asyncio.Event())
    assert (pool.specs["m:3"].runtime, pool.specs["m:3"].precision) == ("openvino", "bf16")

    native = LoadOptions(runtimes={"*": RuntimeChoice("onnxruntime")})
    loader = VersionLoader(pool, intra_op=1, inter_op=1, options=native)
    await loader.load(ModelSpecConfig("n", str(tmp_path)), 3, directory, asyncio.Event())
    assert (pool.specs["n:3"].runtime, pool.specs["n:3"].precision) == ("", "")


async def test_a_runtime_that_cannot_serve_the_platform_fails_the_load(tmp_path: Path) -> None:
    directory = _version(tmp_path)
    runtimes = Settings(model_base_path="/m", model_runtimes="*=tensorflow").model_runtime_choices
    loader = VersionLoader(
        FakePool(), intra_op=1, inter_op=1, options=LoadOptions(runtimes=runtimes)
    )
    with pytest.raises(FailedPrecondition) as raised:
        await loader.load(ModelSpecConfig("m", str(tmp_path)), 3, directory, asyncio.Event())
    assert raised.value.message == (
        "model m: runtime tensorflow cannot serve onnx models (--model_runtimes)"
    )
