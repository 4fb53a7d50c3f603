"""``--enable_server_timing`` through a real gateway: TF Serving's and V2's APIs over gRPC and REST
each answer with a Server-Timing value (REST header, gRPC trailing metadata), whose queue, rows
and compute figures are the ones the per-model histograms observe; callers sharing a batch each
see their own rows, never the batch's; without the flag no answer carries one."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from gateway._pb.inference import grpc_service_pb2 as v2
from gateway._pb.inference import grpc_service_pb2_grpc as v2_grpc
from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support import onnx_models
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import predict_request

ROW = [0.5] * 64
MS = r"(\d+\.\d{3})"
TIMING = re.compile(rf'^queue;dur={MS}, rows;desc="(\d+)", compute;dur={MS}, total;dur={MS}$')
ROUNDING_S = 0.0005e-3
"""Each figure is written in milliseconds with 3 decimals: at most half a microsecond off."""


def _gateway(model_repo: Path, logs: Path, *extra: str) -> Iterator[GatewayProcess]:
    config = logs / "monitoring.config"
    config.write_text("prometheus_config { enable: true }\n")
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--rest_api_port=-1",
        f"--monitoring_config_file={config}",
        "--file_system_poll_wait_seconds=0",
        *extra,
    ]
    with running_gateway(args, logs) as process:
        yield process


@pytest.fixture(scope="module")
def timed(model_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    yield from _gateway(model_repo, tmp_path_factory.mktemp("timed"), "--enable_server_timing")


def _post(gateway: GatewayProcess, path: str, body: object) -> tuple[int, str | None]:
    url = f"http://127.0.0.1:{gateway.rest_port}{path}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return int(response.status), response.headers.get("Server-Timing")
    except urllib.error.HTTPError as error:
        error.read()
        return int(error.code), error.headers.get("Server-Timing")


def _tf_grpc(gateway: GatewayProcess, rows: int) -> str:
    x = np.full((rows, 64), 0.5, np.float32)
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        _, call = stub.Predict.with_call(predict_request("mlp", {"x": x}), timeout=30)
    return dict(call.trailing_metadata())["server-timing"]


def _v2_grpc(gateway: GatewayProcess, rows: int) -> str:
    request = v2.ModelInferRequest(model_name="mlp")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[rows, 64])
    tensor.contents.fp32_contents.extend([0.5] * (64 * rows))
    with grpc.insecure_channel(gateway.target) as channel:
        stub = v2_grpc.GRPCInferenceServiceStub(channel)
        _, call = stub.ModelInfer.with_call(request, timeout=30)
    return dict(call.trailing_metadata())["server-timing"]


def _tf_rest(gateway: GatewayProcess, rows: int) -> str:
    status, timing = _post(gateway, "/v1/models/mlp:predict", {"instances": [ROW] * rows})
    assert status == 200 and timing is not None
    return timing


def _v2_rest(gateway: GatewayProcess, rows: int) -> str:
    tensor = {"name": "x", "datatype": "FP32", "shape": [rows, 64], "data": ROW * rows}
    status, timing = _post(gateway, "/v2/models/mlp/infer", {"inputs": [tensor]})
    assert status == 200 and timing is not None
    return timing


def _histogram_sums(gateway: GatewayProcess) -> dict[str, tuple[float, int]]:
    """``tensorgate_*`` family → (sum, count) of mlp's version 2 series."""
    url = f"http://127.0.0.1:{gateway.rest_port}/monitoring/prometheus/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        page = response.read().decode()
    found: dict[str, list[float]] = {}
    for name, kind, value in re.findall(
        r'^(tensorgate_\w+?)_(sum|count)\{model_name="mlp",version="2"\} (\S+)$', page, re.M
    ):
        found.setdefault(name, [0.0, 0.0])[0 if kind == "sum" else 1] = float(value)
    return {name: (total, int(count)) for name, (total, count) in found.items()}


def test_every_protocol_and_api_answers_with_the_histograms_figures(
    timed: GatewayProcess,
) -> None:
    before = _histogram_sums(timed)
    calls = [_tf_grpc, _v2_grpc, _tf_rest, _v2_rest]
    values = [call(timed, rows) for rows, call in enumerate(calls, start=1)]
    after = _histogram_sums(timed)
    parsed = []
    for rows, value in enumerate(values, start=1):
        match = TIMING.match(value)
        assert match is not None, value
        queue_ms, batch, compute_ms, total_ms = match.groups()
        assert int(batch) == rows  # calls one at a time: each batch is the call alone
        assert float(queue_ms) + float(compute_ms) <= float(total_ms)
        parsed.append((float(queue_ms) / 1e3, int(batch), float(compute_ms) / 1e3))
    slack = len(values) * ROUNDING_S
    for family, index in (
        ("tensorgate_queue_wait_seconds", 0),
        ("tensorgate_batch_size", 1),
        ("tensorgate_compute_seconds", 2),
    ):
        start = before.get(family, (0.0, 0))  # no series before the model's first batch
        total = after[family][0] - start[0]
        assert after[family][1] - start[1] == len(values), family
        assert abs(total - sum(p[index] for p in parsed)) <= slack, family


def test_an_error_answer_and_a_metadata_call_carry_the_total_alone(timed: GatewayProcess) -> None:
    status, timing = _post(timed, "/v1/models/mlp:predict", {"instances": "x"})
    assert status == 400
    assert timing is not None and re.fullmatch(r"total;dur=\d+\.\d{3}", timing)
    url = f"http://127.0.0.1:{timed.rest_port}/v1/models/mlp/metadata"
    with urllib.request.urlopen(url, timeout=30) as response:
        assert re.fullmatch(r"total;dur=\d+\.\d{3}", response.headers["Server-Timing"])


def test_without_the_flag_no_answer_carries_timing(
    model_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for gateway in _gateway(model_repo, tmp_path_factory.mktemp("untimed")):
        assert _post(gateway, "/v1/models/mlp:predict", {"instances": [ROW]}) == (200, None)
        x = np.ones((1, 64), np.float32)
        with grpc.insecure_channel(gateway.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            _, call = stub.Predict.with_call(predict_request("mlp", {"x": x}), timeout=30)
        assert "server-timing" not in dict(call.trailing_metadata())


SHARED = "max_batch_size { value: 41 }\nbatch_timeout_micros { value: 600000000 }\n"
"""A batch closes at 41 rows only (a 10-minute timeout): a call of 1 row and one of 40 share it."""


def test_callers_sharing_a_batch_each_see_their_own_rows(tmp_path: Path) -> None:
    """The batch's size would tell a 1-row caller how much traffic others send: each caller's
    ``rows`` is its own (1 and 40), though both ran in one batch of 41."""
    onnx_models.identity(tmp_path / "held" / "1" / "model.onnx", "float32")
    (tmp_path / "held" / "1" / "batching_params.pbtxt").write_text(SHARED)
    (tmp_path / "batching.config").write_text(SHARED)
    (tmp_path / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    args = [
        "--model_name=held",
        f"--model_base_path={tmp_path / 'held'}",
        "--workers=1",
        "--enable_batching",
        f"--batching_parameters_file={tmp_path / 'batching.config'}",
        "--enable_per_model_batching_parameters",
        f"--monitoring_config_file={tmp_path / 'monitoring.config'}",
        "--rest_api_port=-1",
        "--enable_server_timing",
    ]
    with running_gateway(args, tmp_path) as gateway:
        with grpc.insecure_channel(gateway.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            calls = [
                stub.Predict.future(
                    predict_request("held", {"x": np.ones((rows, 3), np.float32)}), timeout=60
                )
                for rows in (1, 40)
            ]
            timings = [dict(c.trailing_metadata())["server-timing"] for c in calls]
            assert [c.result().outputs["y"].tensor_shape.dim[0].size for c in calls] == [1, 40]
        url = f"http://127.0.0.1:{gateway.rest_port}/monitoring/prometheus/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            page = response.read().decode()
    (batches,) = re.findall(
        r'^tensorgate_batch_size_count\{model_name="held",[^}]*\} (\S+)$', page, re.M
    )
    assert float(batches) == 1  # one batch of 41 rows
    own = [re.search(r'(?:rows|batch);desc="(\d+)"', t) for t in timings]
    assert [int(m[1]) if m else None for m in own] == [1, 40], timings
