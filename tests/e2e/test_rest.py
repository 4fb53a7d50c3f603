"""The REST surface through a real gateway process (the in-process REST tests cover the details)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import numpy as np

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import running_gateway
from tests.support.grpc_calls import outputs_of, predict_request


def http(method: str, url: str, body: object = None) -> tuple[int, dict[str, object]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_rest_and_grpc_answer_alike_through_the_gateway(model_repo: Path, tmp_path: Path) -> None:
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--rest_api_port=-1",
    ]
    x = np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)
    with running_gateway(args, tmp_path) as gateway:
        base = f"http://127.0.0.1:{gateway.rest_port}"
        status, body = http("POST", f"{base}/v1/models/mlp:predict", {"instances": x.tolist()})
        assert status == 200, body
        with grpc.insecure_channel(gateway.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            expected = outputs_of(stub.Predict(predict_request("mlp", {"x": x}), timeout=30))
        predictions = body["predictions"]
        assert isinstance(predictions, list)
        got = np.array([row["probs"] for row in predictions], np.float32)
        np.testing.assert_array_equal(got, expected["probs"])

        status, body = http("GET", f"{base}/v1/models/mlp")
        assert status == 200
        assert body["model_version_status"] == [
            {
                "version": "2",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
        status, body = http("GET", f"{base}/v1/models/nope")
        assert status == 404 and "nope" in str(body["error"])
        with urllib.request.urlopen(f"{base}/readyz", timeout=30) as response:
            assert response.status == 200
