"""Where runs go, through a real gateway: a light ONNX model runs in each front end (no worker
runs, same answers), ``--inline_runs=never`` sends every run to the workers, and the metrics page
says where each version runs."""

from __future__ import annotations

import contextlib
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.ort import run_reference
from tests.support.waits import until

PATH = "/monitoring/prometheus/metrics"
FRONT_ENDS = 2
SETTLE_S = 60.0


@pytest.fixture(scope="module", params=["auto", "never"])
def gateway(
    request: pytest.FixtureRequest, model_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    logs = tmp_path_factory.mktemp(f"inline-{request.param}")
    config = logs / "monitoring.config"
    config.write_text(f'prometheus_config {{ enable: true path: "{PATH}" }}\n')
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        f"--frontends={FRONT_ENDS}",
        f"--inline_runs={request.param}",
        "--rest_api_port=-1",
        f"--monitoring_config_file={config}",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, logs) as process:
        yield process


def page(gateway: GatewayProcess) -> str:
    url = f"http://127.0.0.1:{gateway.rest_port}{PATH}"
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


def value(text: str, series: str) -> float:
    found = re.search(rf"^{re.escape(series)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def runs_in(gateway: GatewayProcess, where: str) -> str:
    return f'tensorgate_model_runs_in{{model_name="mlp",runs_in="{where}",version="2"}}'


def placed(gateway: GatewayProcess, where: str) -> str:
    """The page once every front end has placed the served version (each measures it on a thread
    as it arrives; until then its runs go to the workers, which always hold it)."""
    series = runs_in(gateway, where)
    texts = [page(gateway)]

    def all_placed() -> bool:
        texts.append(page(gateway))
        return value(texts[-1], series) == FRONT_ENDS

    # A bounded wait for a state the page reports, not a timed assertion: the caller's asserts
    # say what the page showed last if it never came.
    with contextlib.suppress(AssertionError):
        until(all_placed, f"{series} = {FRONT_ENDS}", SETTLE_S, poll_s=0.05)
    return texts[-1]


def test_runs_go_where_the_rule_places_them_with_the_same_answers(
    gateway: GatewayProcess, model_repo: Path, request: pytest.FixtureRequest
) -> None:
    mode = request.node.callspec.params["gateway"]
    where = "frontend" if mode == "auto" else "workers"
    before = placed(gateway, where)
    assert value(before, runs_in(gateway, where)) == FRONT_ENDS
    rng = np.random.default_rng(5)
    batches = [
        rng.standard_normal((int(rng.integers(1, 9)), 64)).astype(np.float32) for _ in range(8)
    ]
    # One channel per call: connections spread over both front ends.
    for x in batches * 3:
        with grpc.insecure_channel(gateway.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            response = stub.Predict(predict_request("mlp", {"x": x}), timeout=30)
        expected = run_reference(model_repo / "mlp" / "2" / "model.onnx", {"x": x})
        for name, array in outputs_of(response).items():
            np.testing.assert_allclose(array, expected[name], rtol=1e-5, atol=1e-6)
    after = page(gateway)
    worker_runs = 'tensorgate_worker_runs_total{worker="0"}'
    grown = value(after, worker_runs) - value(before, worker_runs)
    if mode == "auto":
        assert grown == 0, "a light model's runs went to the worker"
    else:
        assert grown >= 1
