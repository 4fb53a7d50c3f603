"""TLS and mTLS from ``--ssl_config_file`` (TF Serving's SSLConfig), on gRPC and on REST
(``--rest_api_enable_tls``), with certificates made for the test."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.certs import KeyPair, Pki, make_pki, ssl_config_text
from tests.support.gateway_proc import running_gateway
from tests.support.grpc_calls import outputs_of, predict_request

X = np.ones((1, 64), np.float32)


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki()


def _args(model_repo: Path, tmp_path: Path, pki: Pki, *, client_verify: bool) -> list[str]:
    config = tmp_path / "ssl.config"
    config.write_text(ssl_config_text(pki, client_verify=client_verify))
    return [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        f"--ssl_config_file={config}",
    ]


def _predict(target: str, credentials: grpc.ChannelCredentials | None) -> grpc.StatusCode:
    channel = (
        grpc.insecure_channel(target)
        if credentials is None
        else grpc.secure_channel(target, credentials)
    )
    with channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        try:
            outputs = outputs_of(stub.Predict(predict_request("mlp", {"x": X}), timeout=30))
        except grpc.RpcError as error:
            return error.code()
        assert outputs["probs"].shape == (1, 10)
        return grpc.StatusCode.OK


def _credentials(pki: Pki, client: KeyPair | None = None) -> grpc.ChannelCredentials:
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=pki.ca)
    return grpc.ssl_channel_credentials(pki.ca, client.key, client.cert)


def test_grpc_over_tls(model_repo: Path, tmp_path: Path, pki: Pki) -> None:
    args = _args(model_repo, tmp_path, pki, client_verify=False)
    with running_gateway(args, tmp_path) as gateway:
        target = f"localhost:{gateway.grpc_port}"
        assert _predict(target, _credentials(pki)) == grpc.StatusCode.OK
        assert _predict(target, None) == grpc.StatusCode.UNAVAILABLE  # plaintext is not served
        assert "(TLS)" in gateway.log()


def _https(port: int, pki: Pki, tmp_path: Path, client: KeyPair | None) -> int:
    context = ssl.create_default_context(cadata=pki.ca.decode())
    if client is not None:
        (tmp_path / "client.key").write_bytes(client.key)
        (tmp_path / "client.pem").write_bytes(client.cert)
        context.load_cert_chain(tmp_path / "client.pem", tmp_path / "client.key")
    body = json.dumps({"instances": X.tolist()}).encode()
    url = f"https://localhost:{port}/v1/models/mlp:predict"
    try:
        with urllib.request.urlopen(url, body, timeout=30, context=context) as response:
            assert len(json.loads(response.read())["predictions"]) == 1
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, ssl.SSLError, ConnectionError):
        return 0  # the handshake (or the connection right after it) was refused


def test_mtls_needs_a_client_certificate_from_the_ca(
    model_repo: Path, tmp_path: Path, pki: Pki
) -> None:
    args = [
        *_args(model_repo, tmp_path, pki, client_verify=True),
        "--rest_api_port=-1",
        "--rest_api_enable_tls",
    ]
    with running_gateway(args, tmp_path) as gateway:
        target = f"localhost:{gateway.grpc_port}"
        assert _predict(target, _credentials(pki, pki.client)) == grpc.StatusCode.OK
        assert _predict(target, _credentials(pki)) == grpc.StatusCode.UNAVAILABLE
        assert _predict(target, _credentials(pki, pki.stranger)) == grpc.StatusCode.UNAVAILABLE
        assert _https(gateway.rest_port, pki, tmp_path, pki.client) == 200
        assert _https(gateway.rest_port, pki, tmp_path, None) == 0
        assert _https(gateway.rest_port, pki, tmp_path, pki.stranger) == 0
