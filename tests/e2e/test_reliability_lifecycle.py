"""Load reliability against real gateway processes with real workers: a load retry blocks
nothing, a base path that goes missing unloads nothing, large requests wait for room in a
worker's input area.

Waits are on RPC answers, on what the gateway reports (GetModelStatus for a retry) and on the
kernel's word that a poll listed a base path (inotify), each bounded by WAIT_S, which is never
reached when things work.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import numpy as np

from gateway._pb.tensorflow_serving.apis import (
    get_model_status_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)
from tests.support import onnx_models
from tests.support.gateway_proc import running_gateway
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.inotify import IN_OPEN, PathEvents
from tests.support.lifecycle import X, config_text, predict, reload, reload_request, status
from tests.support.waits import until

WAIT_S = 60.0
RELOAD_DEADLINE_S = 20.0
"""The reload's own deadline (the retry it must not wait for waits an hour)."""
State = get_model_status_pb2.ModelVersionStatus.State
POLLS_AFTER = 3
"""Polls (one listing of a base path each) that prove a whole poll ran after a change: the
second began after the first, so after the change, and had ended when the third began."""


def _failed_once(versions: list[tuple[int, int, str]]) -> bool:
    """Version 2 is listed with its load's error (it is listed, loading, before that)."""
    return len(versions) == 2 and versions[1][2] != ""


def test_a_load_retry_blocks_neither_the_poll_nor_a_reload(tmp_path: Path) -> None:
    """While a half-written version 2 waits its retry (an hour here), the served
    version keeps serving, GetModelStatus shows the retry's last error, and a reload that adds
    a model is answered within its deadline (before: DEADLINE_EXCEEDED)."""
    onnx_models.scaled(tmp_path / "scaled" / "1" / "model.onnx", 2.0)
    onnx_models.scaled(tmp_path / "other" / "1" / "model.onnx", 5.0)
    config = tmp_path / "models.config"
    config.write_text(config_text(f"scaled:{tmp_path / 'scaled'}"))
    args = [
        f"--model_config_file={config}",
        "--enable_model_management_api",
        f"--management_base_path_dirs={tmp_path}",
        "--workers=1",
        "--file_system_poll_wait_seconds=1",
        "--load_retry_interval_micros=3600000000",
    ]
    with (
        running_gateway(args, tmp_path) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
    ):
        (tmp_path / "scaled" / "2").mkdir()
        (tmp_path / "scaled" / "2" / "model.onnx").write_bytes(b"half-written")
        until(lambda: _failed_once(status(channel, "scaled")), "version 2 failed once")
        (one, two) = status(channel, "scaled")
        assert one == (1, State.AVAILABLE, "")
        assert two[:2] == (2, State.LOADING) and "cannot load ONNX model" in two[2]
        assert predict(channel, "scaled")[0] == 1
        text = config_text(f"scaled:{tmp_path / 'scaled'}", f"other:{tmp_path / 'other'}")
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        response = stub.HandleReloadConfigRequest(reload_request(text), timeout=RELOAD_DEADLINE_S)
        assert response.status.error_code == 0  # before: DEADLINE_EXCEEDED (held by the retry)
        np.testing.assert_array_equal(predict(channel, "other")[1], X * 5)
        assert status(channel, "scaled")[1][:2] == (2, State.LOADING)  # still waiting


def test_a_base_path_gone_for_a_while_or_mistyped_keeps_the_model_serving(tmp_path: Path) -> None:
    """Renaming the base directory away for a few polls unloaded the served version
    (NOT_FOUND), and so did a config rewrite with a typo in base_path."""
    base = tmp_path / "models" / "scaled"
    onnx_models.scaled(base / "1" / "model.onnx", 2.0)
    tick = tmp_path / "models" / "tick"  # every poll lists each base path, this one too
    onnx_models.scaled(tick / "1" / "model.onnx", 1.0)
    config = tmp_path / "models.config"
    config.write_text(config_text(f"scaled:{base}", f"tick:{tick}"))
    args = [
        f"--model_config_file={config}",
        "--enable_model_management_api",
        f"--management_base_path_dirs={tmp_path}",
        "--workers=1",
        "--file_system_poll_wait_seconds=1",
    ]
    with (
        running_gateway(args, tmp_path) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
        PathEvents(tick, IN_OPEN) as polls,
    ):
        base.rename(tmp_path / "away")
        polls.read()  # listings from before the rename do not count
        polls.wait(POLLS_AFTER, "a whole poll after the rename")
        assert f"Could not find base path {base} for servable" in gateway.log()
        assert predict(channel, "scaled")[0] == 1
        assert status(channel, "scaled") == [(1, State.AVAILABLE, "")]
        (tmp_path / "away").rename(base)
        typo = tmp_path / "modles" / "scaled"
        assert reload(channel, config_text(f"scaled:{typo}", f"tick:{tick}")).status.error_code == 0
        polls.read()  # listings from before the reload do not count
        polls.wait(POLLS_AFTER, "a whole poll after the reload")
        assert f"Could not find base path {typo} for servable" in gateway.log()
        assert predict(channel, "scaled")[0] == 1
        assert status(channel, "scaled") == [(1, State.AVAILABLE, "")]


async def test_large_requests_that_fit_the_input_area_one_at_a_time_all_succeed(
    tmp_path: Path,
) -> None:
    """With 1 MiB input areas, 800 KB requests, six in flight on one worker: each
    waits for room instead of RESOURCE_EXHAUSTED "input area is full; retry later"."""
    onnx_models.scaled(tmp_path / "scaled" / "1" / "model.onnx", 2.0)
    args = [
        f"--model_base_path={tmp_path / 'scaled'}",
        "--model_name=scaled",
        "--workers=1",
        "--worker_arena_mb=1",
    ]
    rows = 100_000  # x float32[rows, 2]: 800 KB

    with running_gateway(args, tmp_path) as gateway:
        async with grpc.aio.insecure_channel(gateway.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

            async def call(i: int) -> float:
                x = np.full((rows, 2), float(i), np.float32)
                response = await stub.Predict(predict_request("scaled", {"x": x}), timeout=WAIT_S)
                y = outputs_of(response)["y"]
                assert y.shape == (rows, 2)
                return float(y[-1, -1])

            lasts = await asyncio.gather(*(call(i) for i in range(6)))
        assert lasts == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
