"""The metrics page through a real gateway: TF Serving's exposition for a known sequence of gRPC and
REST calls, scraped by a real Prometheus server and queried with PromQL, and the workers' own
figures across a worker restart."""

from __future__ import annotations

import json
import os
import re
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway._pb.tensorflow_serving.apis import get_model_metadata_pb2, prediction_service_pb2_grpc
from gateway.observability.tfs_metrics import LATENCY_BUCKETS, g6
from tests.support.gateway_proc import GatewayProcess, running_gateway, worker_pids
from tests.support.grpc_calls import predict_request
from tests.support.prometheus import running_prometheus
from tests.support.rest import urlopen_answer

PATH = "/monitoring/prometheus/metrics"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
ROW = [0.0] * 64


@pytest.fixture(scope="module")
def gateway(model_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """mlp on one worker, metrics at TF Serving's default path (the config names none)."""
    logs = tmp_path_factory.mktemp("metrics")
    config = logs / "monitoring.config"
    config.write_text("prometheus_config { enable: true }\n")
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--inline_runs=never",  # runs go to the workers this test observes
        "--rest_api_port=-1",
        f"--monitoring_config_file={config}",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, logs) as process:
        yield process


def http(gateway: GatewayProcess, method: str, path: str, body: object = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    url = f"http://127.0.0.1:{gateway.rest_port}{path}"
    return urlopen_answer(urllib.request.Request(url, data=data, method=method))[0]


def scrape(gateway: GatewayProcess) -> str:
    url = f"http://127.0.0.1:{gateway.rest_port}{PATH}"
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        return str(response.read().decode())


def grpc_calls(gateway: GatewayProcess) -> None:
    """3 OK Predicts, one unknown model, one bad input, and one GetModelMetadata."""
    x = np.ones((1, 64), np.float32)
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        for _ in range(3):
            stub.Predict(predict_request("mlp", {"x": x}), timeout=30)
        for request, code in (
            (predict_request("nope", {"x": x}), grpc.StatusCode.NOT_FOUND),
            (predict_request("mlp", {"y": x}), grpc.StatusCode.INVALID_ARGUMENT),
        ):
            with pytest.raises(grpc.RpcError) as info:
                stub.Predict(request, timeout=30)
            assert info.value.code() == code
        metadata = get_model_metadata_pb2.GetModelMetadataRequest()
        metadata.model_spec.name = "mlp"
        metadata.metadata_field.append("signature_def")
        stub.GetModelMetadata(metadata, timeout=30)


def rest_calls(gateway: GatewayProcess) -> None:
    """2 OK predicts, one status GET, one malformed body, one unknown model's metadata."""
    for _ in range(2):
        assert http(gateway, "POST", "/v1/models/mlp:predict", {"instances": [ROW]}) == 200
    assert http(gateway, "GET", "/v1/models/mlp") == 200
    assert http(gateway, "POST", "/v1/models/mlp:predict", {"instances": "x"}) == 400
    assert http(gateway, "GET", "/v1/models/nope/metadata") == 404


def _tf_section(page: str) -> str:
    """The TF part of the page with latency counts and sums masked (they depend on timing)."""
    lines = [line for line in page.splitlines() if line.startswith(("# TYPE :", ":"))]
    masked = []
    for line in lines:
        line = re.sub(r'(_bucket\{.*le="[^"]+"\}) \d+$', r"\1 N", line)
        masked.append(re.sub(r"(_sum\{.*\}) \S+$", r"\1 S", line))
    return "\n".join(masked) + "\n"


def _latency(name: str, labels: str, count: int) -> list[str]:
    bounds = [g6(b) for b in LATENCY_BUCKETS] + ["+Inf"]
    lines = [f'{name}_bucket{{{labels},le="{b}"}} N' for b in bounds]
    return [*lines, f"{name}_sum{{{labels}}} S", f"{name}_count{{{labels}}} {count}"]


def test_tf_serving_exposition_for_a_known_sequence_of_calls(gateway: GatewayProcess) -> None:
    grpc_calls(gateway)
    rest_calls(gateway)
    page = scrape(gateway)
    tfs = ":tensorflow:serving:"
    expected = [
        f"# TYPE {tfs}batching_session:queuing_latency histogram",
        f"# TYPE {tfs}batching_session:wrapped_run_count counter",
        f"# TYPE {tfs}model_warmup_latency histogram",
        f"# TYPE {tfs}model_warmup_records_read counter",
        f"# TYPE {tfs}request_count counter",
        # a model name that is not served never labels a series (callers chose it)
        f'{tfs}request_count{{model_name="(unknown)",status="NOT_FOUND"}} 2',
        f'{tfs}request_count{{model_name="mlp",status="INVALID_ARGUMENT"}} 2',
        f'{tfs}request_count{{model_name="mlp",status="OK"}} 6',
        f"# TYPE {tfs}request_example_count_total counter",
        f"# TYPE {tfs}request_example_counts histogram",
        f"# TYPE {tfs}request_latency histogram",
        *_latency(f"{tfs}request_latency", 'model_name="mlp",API="",entrypoint="REST"', 1),
        *_latency(f"{tfs}request_latency", 'model_name="mlp",API="Predict",entrypoint="GRPC"', 3),
        *_latency(f"{tfs}request_latency", 'model_name="mlp",API="predict",entrypoint="REST"', 2),
        f"# TYPE {tfs}runtime_latency histogram",
        *_latency(f"{tfs}runtime_latency", 'model_name="mlp",API="Predict",runtime="ONNX"', 5),
    ]
    assert _tf_section(page) == "\n".join(expected) + "\n"
    # tensorgate's own, Prometheus-style
    assert re.search(
        r'tensorgate_request_duration_seconds_count\{api="GetModelMetadata",entrypoint="GRPC",'
        r'model_name="mlp",protocol="tfserving"\} 1\.0',
        page,
    )
    assert re.search(r'tensorgate_compute_seconds_count\{model_name="mlp",version="2"\} 5\.0', page)
    assert re.search(
        r'tensorgate_batch_size_bucket\{le="1\.0",model_name="mlp",version="2"\} 5', page
    )
    assert 'tensorgate_requests_in_flight{entrypoint="GRPC",protocol="tfserving"} 0.0' in page


def test_prometheus_scrapes_the_page_and_counts_requests_by_status(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    before = _counts(scrape(gateway))
    with running_prometheus(f"127.0.0.1:{gateway.rest_port}", PATH, tmp_path) as prometheus:
        grpc_calls(gateway)
        rest_calls(gateway)
        wanted = {"OK": before["OK"] + 6, "INVALID_ARGUMENT": before["INVALID_ARGUMENT"] + 2}
        wanted["NOT_FOUND"] = before["NOT_FOUND"] + 2
        promql = "sum by (status) (:tensorflow:serving:request_count)"
        result = prometheus.wait_for(
            promql, lambda r: {s["metric"]["status"]: int(s["value"][1]) for s in r} == wanted
        )
        assert {s["metric"]["status"] for s in result} == set(wanted)
        up = prometheus.query('up{job="tensorgate"}')
        assert [s["value"][1] for s in up] == ["1"]


def _counts(page: str) -> dict[str, int]:
    counts = {"OK": 0, "INVALID_ARGUMENT": 0, "NOT_FOUND": 0}
    for status, value in re.findall(
        r'request_count\{model_name="[^"]*",status="(\w+)"\} (\d+)', page
    ):
        counts[status] += int(value)
    return counts


def _worker_lines(page: str) -> list[str]:
    return [line for line in page.splitlines() if line.startswith("tensorgate_worker_info{")]


def test_worker_figures_appear_and_survive_a_worker_restart(gateway: GatewayProcess) -> None:
    x = np.ones((1, 64), np.float32)
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        stub.Predict(predict_request("mlp", {"x": x}), timeout=30)
        (old,) = worker_pids(gateway.pid)
        page = scrape(gateway)
        assert _worker_lines(page) == [f'tensorgate_worker_info{{pid="{old}",worker="0"}} 1.0']
        assert re.search(r'tensorgate_worker_runs_total\{worker="0"\} [1-9]', page)
        assert re.search(
            r'tensorgate_model_load_seconds\{model_name="mlp",version="2",worker="0"\} 0\.\d+', page
        )
        ok_before = _counts(page)["OK"]
        restarts = re.search(r"^tensorgate_worker_restarts_total (\S+)$", page, re.M)
        assert restarts is not None
        health = health_pb2_grpc.HealthStub(channel)
        stream = health.Watch(health_pb2.HealthCheckRequest(service="mlp"), timeout=120)
        _watch_until(stream, SERVING)
        os.kill(old, signal.SIGKILL)
        _watch_until(stream, NOT_SERVING)
        _watch_until(stream, SERVING)
        stream.cancel()
        (new,) = worker_pids(gateway.pid)
        stub.Predict(predict_request("mlp", {"x": x}), timeout=30)
        page = scrape(gateway)
    assert new != old
    assert _worker_lines(page) == [f'tensorgate_worker_info{{pid="{new}",worker="0"}} 1.0']
    assert 'tensorgate_worker_runs_total{worker="0"} 1.0' in page  # the new process's own count
    assert re.search(
        r'tensorgate_model_load_seconds\{model_name="mlp",version="2",worker="0"\}', page
    )
    assert f"tensorgate_worker_restarts_total {float(restarts[1]) + 1}" in page
    assert _counts(page)["OK"] == ok_before + 1  # the gateway's counts live on


def _watch_until(stream: object, wanted: int) -> None:
    for message in stream:  # type: ignore[attr-defined]
        if message.status == wanted:
            return
    raise AssertionError(f"health stream ended before {wanted}")


def test_callers_cannot_grow_the_page_with_model_names(model_repo: Path, tmp_path: Path) -> None:
    """200 token-less REST calls and 200 gRPC calls naming 400 models nobody serves: refused,
    and counted under one fixed label, so the page is as long as before them."""
    tokens = tmp_path / "tokens"
    tokens.write_text("s3cret\n")
    config = tmp_path / "monitoring.config"
    config.write_text("prometheus_config { enable: true }\n")
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--rest_api_port=-1",
        f"--auth_token_file={tokens}",
        f"--monitoring_config_file={config}",
    ]
    with running_gateway(args, tmp_path) as gateway, grpc.insecure_channel(gateway.target) as ch:
        http(gateway, "POST", "/v1/models/warmup:predict", {"instances": [ROW]})
        grpc_refused = prediction_service_pb2_grpc.PredictionServiceStub(ch).Predict
        try:
            grpc_refused(predict_request("warmup", {"x": np.ones((1, 64), np.float32)}))
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        before = scrape(gateway)
        x = np.ones((1, 64), np.float32)
        for i in range(200):
            assert (
                http(gateway, "POST", f"/v1/models/m{i:04d}x:predict", {"instances": [ROW]}) == 401
            )
            try:
                grpc_refused(predict_request(f"g{i:04d}x", {"x": x}), timeout=30)
                raise AssertionError("accepted without a token")
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.UNAUTHENTICATED
        after = scrape(gateway)
    assert "0x" not in after  # no caller's model name labels anything
    assert len(after.splitlines()) == len(before.splitlines())
    assert ':request_count{model_name="(unknown)",status="UNAUTHENTICATED"} 402' in after
