"""A real gateway serving models on OpenVINO (``--model_runtimes``) in an environment where
TensorFlow cannot be imported: the official TF Serving client (its own process, with TensorFlow)
against a SavedModel, the runtime and precision in V2's model metadata, and a gateway whose
workers lack OpenVINO reporting the load error while it serves on."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import openvino as ov
import pytest

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import predict_request
from tests.support.import_block import blocked_env
from tests.support.onnx_models import mlp
from tests.support.paths import SUPPORT
from tests.support.rest import get, post
from tests.support.tf_models_script import models_root

CLIENT = SUPPORT / "tf_openvino_client_script.py"
BF16_CPU = "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """keras_seq (a SavedModel) and mlp (ONNX), in one config file."""
    tf_root = models_root(tmp_path_factory.getbasetemp())
    onnx_dir = tmp_path_factory.mktemp("ov_onnx")
    mlp(onnx_dir / "1" / "model.onnx")
    config = tmp_path_factory.mktemp("ov_config") / "models.config"
    config.write_text(
        "model_config_list {\n"
        f'  config {{ name: "keras_seq" base_path: "{tf_root / "keras_seq"}" }}\n'
        f'  config {{ name: "mlp" base_path: "{onnx_dir}" }}\n'
        "}\n"
    )
    return config


def _gateway(
    repo: Path, root: Path, blocked: tuple[str, ...], runtimes: str
) -> Iterator[GatewayProcess]:
    monitoring = root / "monitoring.config"
    monitoring.write_text("prometheus_config { enable: true }\n")
    args = [
        f"--model_config_file={repo}",
        f"--monitoring_config_file={monitoring}",
        f"--model_runtimes={runtimes}",
        "--rest_api_port=-1",
        "--workers=1",
        "--max_num_load_retries=0",
        "--file_system_poll_wait_seconds=0",
    ]
    env = blocked_env(root / "blocked", *blocked)
    with running_gateway(args, root, env=env) as process:
        yield process


@pytest.fixture(scope="module")
def gateway(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """Every model on OpenVINO, mlp at bf16; TensorFlow unimportable in every process."""
    root = tmp_path_factory.mktemp("ov_gateway")
    yield from _gateway(repo, root, ("tensorflow",), "*=openvino,mlp=openvino:bf16")


@pytest.mark.tfclient
def test_official_client_on_a_saved_model_without_tensorflow(
    gateway: GatewayProcess, repo: Path, tmp_path: Path
) -> None:
    saved_model = Path(repo.read_text().split('base_path: "')[1].split('"')[0]) / "1"
    done = subprocess.run(
        [sys.executable, str(CLIENT), gateway.target, "keras_seq", str(saved_model), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["metadata"] == result["signature"]  # names, dtypes, shapes as TensorFlow's
    assert result["method_name"] == "tensorflow/serving/predict"
    with np.load(tmp_path / "served.npz") as served, np.load(tmp_path / "reference.npz") as ref:
        assert sorted(served.files) == sorted(ref.files)
        for name in ref.files:
            assert served[name].dtype == ref[name].dtype
            np.testing.assert_allclose(served[name], ref[name], rtol=1e-5)  # the README's fp32


def test_runtime_and_precision_in_v2_metadata(gateway: GatewayProcess) -> None:
    base = f"http://127.0.0.1:{gateway.rest_port}/v2/models"
    assert get(f"{base}/keras_seq").json()["platform"] == "openvino_fp32"
    bf16 = "openvino_bf16" if BF16_CPU else "openvino_fp32"  # as this CPU compiles it
    assert get(f"{base}/mlp").json()["platform"] == bf16


def test_runtime_and_precision_label_the_runtime_latency(gateway: GatewayProcess) -> None:
    rest = f"http://127.0.0.1:{gateway.rest_port}"
    reply = post(f"{rest}/v1/models/keras_seq:predict", {"instances": [[1.0], [2.0]]})
    assert reply.json() == {"predictions": [[3.0], [5.0]]}
    with grpc.insecure_channel(gateway.target) as channel:  # TF times its own API's runs
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        x = np.ones((1, 64), np.float32)
        for _ in range(2):
            stub.Predict(predict_request("mlp", {"x": x}), timeout=30)
    page = get(f"{rest}/monitoring/prometheus/metrics").body.decode()
    runtime = "OpenVINO_BF16" if BF16_CPU else "OpenVINO_FP32"
    series = f'model_name="mlp",API="Predict",runtime="{runtime}"'
    assert f":tensorflow:serving:runtime_latency_count{{{series}}} 2" in page


def test_missing_openvino_is_a_load_error(repo: Path, tmp_path: Path) -> None:
    """mlp asks for OpenVINO, which cannot be imported; the same model as mlp_ort serves on."""
    onnx_dir = repo.read_text().split('name: "mlp" base_path: "')[1].split('"')[0]
    config = tmp_path / "models.config"
    config.write_text(
        "model_config_list {\n"
        f'  config {{ name: "mlp" base_path: "{onnx_dir}" }}\n'
        f'  config {{ name: "mlp_ort" base_path: "{onnx_dir}" }}\n'
        "}\n"
    )
    for gateway in _gateway(config, tmp_path, ("openvino",), "mlp=openvino"):
        rest = f"http://127.0.0.1:{gateway.rest_port}/v1/models"
        status = get(f"{rest}/mlp").json()["model_version_status"][0]
        assert status["state"] == "END"
        assert status["status"]["error_code"] == "FAILED_PRECONDITION"
        assert "pip install 'tensorgate[openvino]'" in status["status"]["error_message"]
        reply = post(f"{rest}/mlp_ort:predict", {"instances": [[0.0] * 64]})
        assert sorted(reply.json()["predictions"][0]) == ["logits", "probs"]
