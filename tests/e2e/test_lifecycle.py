"""Model lifecycle against real gateway processes: HandleReloadConfigRequest, config file
polling, warmup, load failures and retries, placement on a subset of workers.

Waits are on events the gateway publishes (``--ready_fd``, grpc.health.v1 ``Watch`` streams, RPC
answers), each bounded by WAIT_S, which is never reached when things work.
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway._pb.tensorflow_serving.apis import (
    get_model_status_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)
from tests.support import onnx_models
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import predict_request
from tests.support.lifecycle import (
    X,
    config_text,
    predict,
    reload,
    reload_error,
    reload_request,
    status,
)
from tests.support.warmup_files import predict_log, write_warmup

WAIT_S = 120.0
State = get_model_status_pb2.ModelVersionStatus.State


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``scaled`` versions 1 (x2) and 2 (x3); ``plus`` (add_two); ``broken`` (garbage)."""
    root = tmp_path_factory.mktemp("lifecycle")
    onnx_models.scaled(root / "scaled" / "1" / "model.onnx", 2.0)
    onnx_models.scaled(root / "scaled" / "2" / "model.onnx", 3.0)
    onnx_models.scaled(root / "other" / "1" / "model.onnx", 5.0)
    (root / "broken" / "1").mkdir(parents=True)
    (root / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx model")
    return root


@pytest.fixture(scope="module")
def managed(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = tmp_path_factory.mktemp("managed") / "models.config"
    config.write_text(config_text(f"scaled:{repo / 'scaled'}:1"))
    args = [
        f"--model_config_file={config}",
        "--enable_model_management_api",
        f"--management_base_path_dirs={repo}",
        "--workers=2",
        "--max_num_load_retries=0",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path_factory.mktemp("managed_logs")) as process:
        yield process


def test_reload_adds_replaces_and_removes_models(managed: GatewayProcess, repo: Path) -> None:
    with grpc.insecure_channel(managed.target) as channel:
        assert predict(channel, "scaled")[0] == 1
        response = reload(
            channel,
            config_text(f"scaled:{repo / 'scaled'}:2", f"other:{repo / 'other'}"),
            ":tensorflow:serving:load_attempt_count",
        )
        assert response.status.error_code == 0 and response.status.error_message == ""
        assert [(m.name, m.int64_value_increase) for m in response.metric] == [
            (":tensorflow:serving:load_attempt_count", 0)
        ]
        version, y = predict(channel, "scaled")  # the new version serves, the old one is gone
        assert version == 2
        np.testing.assert_array_equal(y, X * 3)
        assert [(v, s) for v, s, _ in status(channel, "scaled")] == [
            (1, State.END),
            (2, State.AVAILABLE),
        ]
        np.testing.assert_array_equal(predict(channel, "other")[1], X * 5)
        reload(channel, config_text(f"other:{repo / 'other'}"))
        with pytest.raises(grpc.RpcError) as info:
            predict(channel, "scaled")
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert info.value.details() == "Servable not found for request: Latest(scaled)"
        assert {s for _, s, _ in status(channel, "scaled")} == {State.END}


def test_reload_refusals_keep_the_running_config(managed: GatewayProcess, repo: Path) -> None:
    with grpc.insecure_channel(managed.target) as channel:
        reload(channel, config_text(f"scaled:{repo / 'scaled'}:1"))
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.HandleReloadConfigRequest(model_management_pb2.ReloadConfigRequest(), timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert info.value.details() == (
            "ServerModelConfig type not supported by HandleReloadConfigRequest. "
            "Only ModelConfigList is currently supported"
        )
        labelled = (  # version 2 would load under "all", but the label is checked first
            f'model_config_list {{ config {{ name: "scaled" base_path: "{repo / "scaled"}" '
            'model_version_policy { all {} } version_labels { key: "canary" value: 2 } } }'
        )
        code, details = reload_error(channel, labelled)
        assert code == grpc.StatusCode.FAILED_PRECONDITION
        assert details == (
            "Request to assign label to version 2 of model scaled, which is not currently "
            "available for inference"
        )
        code, details = reload_error(channel, config_text("relative:models/x"))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "absolute path" in details
        code, details = reload_error(
            channel, config_text(f"scaled:{repo / 'scaled'}:1", f"broken:{repo / 'broken'}")
        )
        assert code == grpc.StatusCode.UNKNOWN
        assert details.startswith(
            "1 model(s) did not become available: {{{name: broken version: 1} due to error: "
            "INVALID_ARGUMENT: cannot load ONNX model"
        )
        assert predict(channel, "scaled")[0] == 1  # it serves on, and the failure is reported
        ((version, state, error),) = status(channel, "broken")
        assert (version, state) == (1, State.END) and "cannot load ONNX model" in error


async def test_reload_under_steady_load_fails_no_request(
    managed: GatewayProcess, repo: Path
) -> None:
    """Eight requests in flight at every moment while the config swaps version 1 for 2."""

    async with grpc.aio.insecure_channel(managed.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        await models.HandleReloadConfigRequest(
            reload_request(config_text(f"scaled:{repo / 'scaled'}:1")), timeout=WAIT_S
        )
        reloaded, running = asyncio.Event(), asyncio.Event()
        versions: list[int] = []
        errors: list[BaseException] = []

        async def client() -> None:
            seen_new = 0
            while seen_new < 3:  # keep going until this client got version 2 thrice
                try:
                    response = await stub.Predict(
                        predict_request("scaled", {"x": X}), timeout=WAIT_S
                    )
                except grpc.RpcError as exc:
                    errors.append(exc)
                    return
                versions.append(response.model_spec.version.value)
                if len(versions) >= 16:
                    running.set()
                if reloaded.is_set() and versions[-1] == 2:
                    seen_new += 1

        clients = [asyncio.create_task(client()) for _ in range(8)]
        await asyncio.wait_for(running.wait(), WAIT_S)  # all eight run before the reload
        await models.HandleReloadConfigRequest(
            reload_request(config_text(f"scaled:{repo / 'scaled'}:2")), timeout=WAIT_S
        )
        reloaded.set()
        await asyncio.wait_for(asyncio.gather(*clients), WAIT_S)
    assert errors == []
    assert set(versions) == {1, 2}


def test_config_file_polling_applies_a_rewritten_file(repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "models.config"
    config.write_text(config_text(f"scaled:{repo / 'scaled'}:1"))
    args = [f"--model_config_file={config}", "--model_config_file_poll_wait_seconds=1"]
    with (
        running_gateway([*args, "--workers=1"], tmp_path) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
    ):
        health = health_pb2_grpc.HealthStub(channel)
        watch = health.Watch(health_pb2.HealthCheckRequest(service="other"), timeout=WAIT_S)
        assert next(watch).status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
        config.write_text(config_text(f"other:{repo / 'other'}"))
        for update in watch:
            if update.status == health_pb2.HealthCheckResponse.SERVING:
                break
        watch.cancel()
        np.testing.assert_array_equal(predict(channel, "other")[1], X * 5)
        with pytest.raises(grpc.RpcError) as info:
            predict(channel, "scaled")
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_without_polling_the_config_file_is_read_once(repo: Path, tmp_path: Path) -> None:
    """The file system is scanned every second; the rewritten config is never read."""
    late = tmp_path / "late"
    config = tmp_path / "models.config"
    config.write_text(config_text(f"late:{late}"))
    args = [f"--model_config_file={config}", "--workers=1", "--file_system_poll_wait_seconds=1"]
    with (
        running_gateway(args, tmp_path) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
    ):
        health = health_pb2_grpc.HealthStub(channel)
        watch = health.Watch(health_pb2.HealthCheckRequest(service="late"), timeout=WAIT_S)
        assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING  # no version
        config.write_text(config_text(f"late:{late}", f"other:{repo / 'other'}"))
        onnx_models.scaled(late / "1" / "model.onnx", 7.0)  # a scan after the rewrite loads it
        for update in watch:
            if update.status == health_pb2.HealthCheckResponse.SERVING:
                break
        watch.cancel()
        np.testing.assert_array_equal(predict(channel, "late")[1], X * 7)
        with pytest.raises(grpc.RpcError) as info:
            predict(channel, "other")
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_warmup_is_replayed_in_the_worker_and_failures_stay_with_their_model(
    repo: Path, tmp_path: Path
) -> None:
    warm = tmp_path / "warm" / "1"
    onnx_models.scaled(warm / "model.onnx", 2.0)
    write_warmup(warm, [predict_log({"x": X}), predict_log({"x": X}), predict_log({"x": X})])
    cold = tmp_path / "cold" / "1"
    onnx_models.scaled(cold / "model.onnx", 2.0)
    path = write_warmup(cold, [predict_log({"x": X})])
    path.write_bytes(path.read_bytes()[:-1])  # damaged
    config = tmp_path / "models.config"
    config.write_text(
        config_text(f"warm:{warm.parent}", f"cold:{cold.parent}", f"broken:{repo / 'broken'}")
    )
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text("prometheus_config { enable: true }\n")
    args = [
        f"--model_config_file={config}",
        "--workers=2",
        "--model_workers=warm=1",
        "--num_request_iterations_for_warmup=2",
        "--max_num_load_retries=1",
        "--load_retry_interval_micros=0",
        "--rest_api_port=-1",
        f"--monitoring_config_file={monitoring}",
    ]
    with (
        running_gateway(args, tmp_path) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
    ):
        np.testing.assert_array_equal(predict(channel, "warm")[1], X * 2)
        page = (
            urllib.request.urlopen(
                f"http://127.0.0.1:{gateway.rest_port}/monitoring/prometheus/metrics", timeout=30
            )
            .read()
            .decode()
        )
        # TF Serving's warmup metrics, for the warmed version only (6 runs counted there).
        warm_labels = f'{{model_path="{warm}",status="OK"}}'
        assert f":tensorflow:serving:model_warmup_latency_count{warm_labels} 1" in page
        assert f":tensorflow:serving:model_warmup_records_read{warm_labels} 6" in page
        assert str(cold) not in page
        ((_, state, error),) = status(channel, "cold")
        assert state == State.END
        assert error == (
            "truncated record at 0. Please verify your warmup data is in TFRecord format."
        )
        ((_, state, error),) = status(channel, "broken")
        assert state == State.END and error.startswith("cannot load ONNX model")
        log = gateway.log()
    # Placed on one worker, where the worker counted 3 records x 2 iterations before serving.
    assert log.count("loaded warm:1 from") == 1
    assert "warmed up warm version 1: 6 runs on worker " in log
    assert "loading broken version 1 failed (attempt 1 of 2); retrying in 0 s" in log
    assert log.count("loaded cold:1 from") == 2 * 2  # both workers, two attempts
