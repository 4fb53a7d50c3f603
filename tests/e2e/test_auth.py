"""Bearer tokens through a real gateway: gRPC (UNAUTHENTICATED) and REST (401); health and
probes stay open."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import running_gateway
from tests.support.grpc_calls import outputs_of, predict_request

X = np.ones((1, 64), np.float32)


def _rest(url: str, token: str | None) -> int:
    body = json.dumps({"instances": X.tolist()}).encode()
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    request = urllib.request.Request(url, body if "predict" in url else None, headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        with error:
            assert "error" in json.loads(error.read())
            return error.code


def test_tokens_on_both_surfaces(model_repo: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("s3cret\n")
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--rest_api_port=-1",
        f"--auth_token_file={tokens}",
    ]
    with running_gateway(args, tmp_path) as gateway, grpc.insecure_channel(gateway.target) as ch:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        request = predict_request("mlp", {"x": X})
        for metadata in ((), (("authorization", "Bearer wrong"),), (("authorization", "s3cret"),)):
            try:
                stub.Predict(request, timeout=30, metadata=metadata)
                raise AssertionError(f"accepted with {metadata}")
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.UNAUTHENTICATED, metadata
        good = (("authorization", "Bearer s3cret"),)
        assert outputs_of(stub.Predict(request, timeout=30, metadata=good))["probs"].shape == (
            1,
            10,
        )
        health = health_pb2_grpc.HealthStub(ch)
        status = health.Check(health_pb2.HealthCheckRequest(service="mlp"), timeout=30).status
        assert status == health_pb2.HealthCheckResponse.SERVING  # open by default

        base = f"http://127.0.0.1:{gateway.rest_port}"
        assert _rest(f"{base}/v1/models/mlp:predict", None) == 401
        assert _rest(f"{base}/v1/models/mlp:predict", "wrong") == 401
        assert _rest(f"{base}/v1/models/mlp:predict", "s3cret") == 200
        assert _rest(f"{base}/v1/models/mlp", None) == 401
        assert _rest(f"{base}/healthz", None) == 200
        assert _rest(f"{base}/readyz", None) == 200
        assert "s3cret" not in gateway.log()
