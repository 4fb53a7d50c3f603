"""Where a real gateway listens: bind addresses, the Unix socket path, start-up failures."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import run_cli, running_gateway
from tests.support.grpc_calls import outputs_of, predict_request


def _mlp(model_repo: Path) -> list[str]:
    return ["--model_name=mlp", f"--model_base_path={model_repo / 'mlp'}", "--workers=1"]


def test_a_regular_file_at_grpc_socket_path_fails_the_start_and_survives(
    model_repo: Path, tmp_path: Path
) -> None:
    """It was deleted, after a traceback."""
    path = tmp_path / "notes.txt"
    path.write_text("precious")
    done = run_cli(*_mlp(model_repo), "--port=0", f"--grpc_socket_path={path}")
    assert done.returncode == 1
    assert f"--grpc_socket_path {path} exists and is not a socket" in done.stderr
    assert "Traceback" not in done.stderr
    assert path.read_text() == "precious"


def test_a_stale_socket_is_replaced_and_the_bind_address_is_logged(
    model_repo: Path, tmp_path: Path
) -> None:
    path = tmp_path / "tg.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(path))  # a socket file nobody listens on, as a SIGKILLed server leaves
    args = [*_mlp(model_repo), f"--grpc_socket_path={path}", "--grpc_bind_address=127.0.0.1"]
    with running_gateway(args, tmp_path) as gateway:
        assert f"Running gRPC ModelServer at 127.0.0.1:{gateway.grpc_port} and unix:{path}" in (
            gateway.log()
        )
        with grpc.insecure_channel(f"unix:{path}") as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            x = np.ones((1, 64), np.float32)
            got = outputs_of(stub.Predict(predict_request("mlp", {"x": x}), timeout=30))
            assert got["probs"].shape == (1, 10)
    assert not path.exists()


def test_grpc_connections_past_the_cap_are_closed(model_repo: Path, tmp_path: Path) -> None:
    """19,500 idle connections were accepted until the fd limit; --grpc_max_connections caps
    them (grpc.max_allowed_incoming_connections): a connection past the cap is closed at once."""
    args = [*_mlp(model_repo), "--grpc_max_connections=2"]
    with running_gateway(args, tmp_path) as gateway:
        own_connection = [("grpc.use_local_subchannel_pool", 1)]
        channels = [grpc.insecure_channel(gateway.target, options=own_connection) for _ in range(3)]
        try:
            codes = []
            for channel in channels:
                health = health_pb2_grpc.HealthStub(channel)
                try:
                    health.Check(health_pb2.HealthCheckRequest(service=""), timeout=30)
                    codes.append(grpc.StatusCode.OK)
                except grpc.RpcError as error:
                    codes.append(error.code())
            assert codes == [grpc.StatusCode.OK, grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE]
            with socket.create_connection(("127.0.0.1", gateway.grpc_port), timeout=30) as raw:
                assert raw.recv(16) == b""  # closed by the server, not left open
        finally:
            for channel in channels:
                channel.close()


def _frames(sock: socket.socket) -> Iterator[tuple[int, bytes]]:
    """HTTP/2 frames ``(type, payload)`` read from ``sock`` until it closes."""
    data = b""
    while True:
        while len(data) >= 9 and len(data) >= 9 + int.from_bytes(data[:3], "big"):
            length = int.from_bytes(data[:3], "big")
            yield data[3], data[9 : 9 + length]
            data = data[9 + length :]
        chunk = sock.recv(65536)
        if not chunk:
            return
        data += chunk


def test_an_idle_grpc_connection_gets_goaway(model_repo: Path, tmp_path: Path) -> None:
    """--grpc_idle_timeout_seconds (grpc.max_connection_idle_ms): a connection with no call in
    progress for that long is told to go away (GOAWAY); clients then reconnect by themselves."""
    args = [*_mlp(model_repo), "--grpc_idle_timeout_seconds=0.5"]
    empty_settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    with (
        running_gateway(args, tmp_path) as gateway,
        socket.create_connection(("127.0.0.1", gateway.grpc_port), timeout=60) as raw,
    ):
        raw.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + empty_settings)
        goaway = next(payload for kind, payload in _frames(raw) if kind == GOAWAY)
        assert goaway[8:] == b"connection idle"  # grpc's debug data for this GOAWAY


GOAWAY = 0x7
