"""Faults: a worker killed mid-request, a hung worker, the gateway killed and restarted."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from gateway.config.model_config import ModelSpecConfig
from gateway.errors import Unavailable
from gateway.serving.core import ModelRef, PredictResult
from gateway.serving.inputs import ConvertedInputs
from tests.support import onnx_models
from tests.support.gateway_proc import (
    assert_sigkill_leaves_nothing,
    running_gateway,
    start_gateway,
    wait_gone,
    worker_pids,
)
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.ort import run_reference
from tests.support.stack import serving_stack

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _spec(name: str, base_path: Path) -> ModelSpecConfig:
    return ModelSpecConfig(
        name=name,
        base_path=str(base_path),
        platform="",
        policy="latest",
        num_versions=1,
        versions=(),
        labels={},
    )


async def test_worker_killed_mid_request_fails_it_and_is_respawned(tmp_path: Path) -> None:
    model = onnx_models.mlp(tmp_path / "mlp" / "1" / "model.onnx")
    x = np.ones((4, 64), np.float32)

    async with serving_stack([_spec("mlp", tmp_path / "mlp")]) as stack:
        pool, core = stack.pool, stack.core
        (old_pid,) = pool.pids()
        os.kill(old_pid, signal.SIGSTOP)  # the worker cannot answer: the run stays in flight
        task = asyncio.create_task(
            core.predict(ModelRef("mlp"), "", lambda _signature: ConvertedInputs({"x": x}), _copies)
        )
        await asyncio.sleep(0)  # the request runs up to its await: submitted to the worker
        assert stack.dispatcher.links[0].runs_in_flight == 1
        os.kill(old_pid, signal.SIGKILL)
        with pytest.raises(Unavailable, match="exited"):
            await task
        await pool.wait_all_alive()
        assert pool.pids() != [old_pid]
        assert pool.restarts == 1
        outputs = await core.predict(
            ModelRef("mlp"), "", lambda _signature: ConvertedInputs({"x": x}), _copies
        )
        expected = run_reference(model, {"x": x})
        np.testing.assert_array_equal(outputs["probs"], expected["probs"])


def _watch_until(stream: object, wanted: int) -> None:
    for message in stream:  # type: ignore[attr-defined]
        if message.status == wanted:
            return
    raise AssertionError(f"health stream ended before {wanted}")


def test_worker_sigkill_through_the_gateway(model_repo: Path, tmp_path: Path) -> None:
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--inline_runs=never",
    ]
    with running_gateway(args, tmp_path) as gateway, grpc.insecure_channel(gateway.target) as ch:
        (worker,) = worker_pids(gateway.pid)
        health = health_pb2_grpc.HealthStub(ch)
        stream = health.Watch(health_pb2.HealthCheckRequest(service="mlp"), timeout=120)
        _watch_until(stream, SERVING)
        os.kill(worker, signal.SIGKILL)
        _watch_until(stream, NOT_SERVING)
        _watch_until(stream, SERVING)
        stream.cancel()
        assert worker_pids(gateway.pid) != [worker]
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        x = np.ones((1, 64), np.float32)
        got = outputs_of(stub.Predict(predict_request("mlp", {"x": x}), timeout=30))
        expected = run_reference(model_repo / "mlp" / "2" / "model.onnx", {"x": x})
        np.testing.assert_array_equal(got["probs"], expected["probs"])


def test_hung_worker_is_caught_by_ping(model_repo: Path, tmp_path: Path) -> None:
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--inline_runs=never",  # runs go to the workers this test observes
        "--worker_ping_interval_seconds=0.2",
        "--worker_ping_timeout_seconds=1",
    ]
    with running_gateway(args, tmp_path) as gateway, grpc.insecure_channel(gateway.target) as ch:
        (worker,) = worker_pids(gateway.pid)
        os.kill(worker, signal.SIGSTOP)
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        x = np.ones((1, 64), np.float32)
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(predict_request("mlp", {"x": x}), timeout=60)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert wait_gone(worker)
        health = health_pb2_grpc.HealthStub(ch)
        stream = health.Watch(health_pb2.HealthCheckRequest(service="mlp"), timeout=120)
        _watch_until(stream, SERVING)
        stream.cancel()
        got = outputs_of(stub.Predict(predict_request("mlp", {"x": x}), timeout=30))
        assert got["probs"].shape == (1, 10)


def test_gateway_sigkill_leaves_nothing_and_restarts(model_repo: Path, tmp_path: Path) -> None:
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=2",
        "--inline_runs=never",
    ]
    gateway = start_gateway(args, tmp_path)
    workers = worker_pids(gateway.pid)
    assert len(workers) == 2
    assert_sigkill_leaves_nothing(gateway, workers)
    with running_gateway(args, tmp_path) as again, grpc.insecure_channel(again.target) as ch:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        x = np.ones((1, 64), np.float32)
        assert outputs_of(stub.Predict(predict_request("mlp", {"x": x}), timeout=30))[
            "probs"
        ].shape == (
            1,
            10,
        )


def test_a_hung_worker_is_replaced_within_seconds_not_at_the_ping(
    model_repo: Path, tmp_path: Path
) -> None:
    """With the default 30 s ping timeout, a SIGSTOPped worker was replaced after 34 s; a run that
    takes far longer than the model's runs do now gives it away (2 s for the tiny MLP)."""
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--inline_runs=never",
    ]
    with running_gateway(args, tmp_path) as gateway, grpc.insecure_channel(gateway.target) as ch:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        x = np.ones((1, 64), np.float32)
        stub.Predict(predict_request("mlp", {"x": x}), timeout=30)  # the model's runs are timed
        (worker,) = worker_pids(gateway.pid)
        os.kill(worker, signal.SIGSTOP)
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(predict_request("mlp", {"x": x}), timeout=25)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "stopped answering: a run of mlp:2 (1 rows) computed for over 2.0 s" in (
            info.value.details() or ""
        )
        assert wait_gone(worker)
        health = health_pb2_grpc.HealthStub(ch)
        stream = health.Watch(health_pb2.HealthCheckRequest(service="mlp"), timeout=120)
        _watch_until(stream, SERVING)
        stream.cancel()
        got = outputs_of(stub.Predict(predict_request("mlp", {"x": x}), timeout=30))
        assert got["probs"].shape == (1, 10)


def _copies(result: PredictResult) -> dict[str, np.ndarray]:
    return {name: array.copy() for name, array in result.outputs.items()}
