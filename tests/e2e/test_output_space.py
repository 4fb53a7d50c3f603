"""Every call returns its hold on the worker's output space, however it ends.

A real gateway (one worker, batching with padding, a warmup file, the metrics page) takes a
burst of gRPC and REST calls that complete, are cancelled by the client, run out of time, fail
or classify/regress; once a last call has come back, the channel's output space is fully
released (``tensorgate_shm_bytes_in_use{area="output"}``: the channel's ``output_used``).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    inference_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)
from tests.support import onnx_models
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.warmup_files import predict_log, write_warmup

METRICS = "/monitoring/prometheus/metrics"
IN_USE = re.compile(r'^tensorgate_shm_bytes_in_use\{area="output",worker="0"\} (\S+)$', re.M)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("output_space")
    onnx_models.mlp(root / "mlp" / "1" / "model.onnx", seed=1)
    write_warmup(root / "mlp" / "1" / "assets.extra", [predict_log({"x": _x(2)})] * 3)
    onnx_models.onnx_examples(root / "examples" / "1" / "model.onnx")
    (root / "models.config").write_text(
        f'model_config_list {{ config {{ name: "mlp" base_path: "{root / "mlp"}" }}\n'
        f'  config {{ name: "examples" base_path: "{root / "examples"}" }} }}\n'
    )
    (root / "batching.config").write_text(
        "max_batch_size { value: 8 }\nbatch_timeout_micros { value: 0 }\n"
        "allowed_batch_sizes: 4\nallowed_batch_sizes: 8\n"
    )
    (root / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    args = [
        f"--model_config_file={root / 'models.config'}",
        "--workers=1",
        "--enable_batching",
        f"--batching_parameters_file={root / 'batching.config'}",
        f"--monitoring_config_file={root / 'monitoring.config'}",
        "--rest_api_port=-1",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, root) as process:
        yield process


def _x(rows: int) -> np.ndarray:
    return np.linspace(-1, 1, rows * 64, dtype=np.float32).reshape(rows, 64)


def _examples(
    request: classification_pb2.ClassificationRequest
    | regression_pb2.RegressionRequest
    | inference_pb2.MultiInferenceRequest,
) -> None:
    if not isinstance(request, inference_pb2.MultiInferenceRequest):
        request.model_spec.name = "examples"
    for i in range(3):
        example = request.input.example_list.examples.add()
        example.features.feature["x"].float_list.value.append(float(i))
        example.features.feature["n"].int64_list.value.append(i)


def _rest(gateway: GatewayProcess, path: str, body: object | None = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    url = f"http://127.0.0.1:{gateway.rest_port}{path}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=60) as reply:
            return int(reply.status), bytes(reply.read())
    except urllib.error.HTTPError as error:
        return int(error.code), bytes(error.read())


def _output_in_use(gateway: GatewayProcess) -> float:
    status, page = _rest(gateway, METRICS)
    assert status == 200
    (value,) = IN_USE.findall(page.decode())
    return float(value)


def test_a_burst_of_mixed_calls_leaves_no_output_space_held(gateway: GatewayProcess) -> None:
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        completed = [
            stub.Predict.future(predict_request("mlp", {"x": _x(1 + i % 3)}), timeout=60)
            for i in range(8)
        ]
        cancelled = [
            stub.Predict.future(predict_request("mlp", {"x": _x(2)}), timeout=60) for _ in range(6)
        ]
        for call in cancelled:
            call.cancel()
        rushed = [
            stub.Predict.future(predict_request("mlp", {"x": _x(3)}), timeout=0.002)
            for _ in range(6)
        ]
        failing = stub.Predict.future(predict_request("mlp", {"x": _x(1)[:, :3]}), timeout=60)
        classify = classification_pb2.ClassificationRequest()
        regress = regression_pb2.RegressionRequest()
        multi = inference_pb2.MultiInferenceRequest()
        for request in (classify, regress, multi):
            _examples(request)
        task = multi.tasks.add()
        task.model_spec.name = "examples"
        task.method_name = "tensorflow/serving/regress"
        inference = [
            stub.Classify.future(classify, timeout=60),
            stub.Regress.future(regress, timeout=60),
            stub.MultiInference.future(multi, timeout=60),
        ]
        rest = [
            _rest(gateway, "/v1/models/mlp:predict", {"instances": _x(2).tolist()}),
            _rest(gateway, "/v1/models/mlp:predict", {"instances": [[1.0]]}),  # bad shape
            _rest(gateway, "/v1/models/examples:classify", {"examples": [{"x": 1.0, "n": 1}]}),
            _rest(gateway, "/v1/models/examples:regress", {"examples": [{"x": 1.0, "n": 1}]}),
        ]
        for call in completed:
            assert set(outputs_of(call.result())) == {"logits", "probs"}
        for call in rushed:
            assert call.exception() is None or call.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert failing.code() == grpc.StatusCode.INVALID_ARGUMENT
        for call in inference:
            assert call.exception() is None, call.exception()
        assert [status for status, _ in rest] == [200, 400, 200, 200]
        # Runs complete, and are handed out, in order: once this one is back, every earlier
        # run's rows have been encoded or dropped.
        stub.Predict(predict_request("mlp", {"x": _x(1)}), timeout=60)
    assert _output_in_use(gateway) == 0.0
