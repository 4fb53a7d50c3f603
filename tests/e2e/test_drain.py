"""SIGTERM drains a real gateway: nothing accepted is lost, nothing new is taken.

Held requests wait in an open batch (a 10-minute batch timeout) so that "in flight when the signal
arrives" is a fact of the test, not a race; the drain sends open batches at once.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import running_gateway, start_gateway, worker_pids
from tests.support.grpc_calls import in_flight_but_the_busy_one, outputs_of, predict_request

X = np.ones((1, 64), np.float32)
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
HELD = 3


def _held_args(model_repo: Path, tmp_path: Path, *extra: str) -> list[str]:
    params = tmp_path / "batching.config"
    params.write_text(
        "max_batch_size { value: 64 }\n"
        "batch_timeout_micros { value: 600000000 }\n"
        "max_enqueued_batches { value: 100 }\n"
    )
    return [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--inline_runs=never",  # runs go to the workers this test observes
        "--enable_batching",
        f"--batching_parameters_file={params}",
        f"--max_concurrent_requests={HELD}",
        "--shutdown_grace_seconds=60",
        *extra,
    ]


def _wait_not_serving(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    stream = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60)
    for message in stream:
        if message.status == NOT_SERVING:
            stream.cancel()
            return
    raise AssertionError("health never went NOT_SERVING")


def _hold(stub: prediction_service_pb2_grpc.PredictionServiceStub) -> list[grpc.Future]:
    """``HELD`` requests in flight (in the open batch): a call past the limit proves it."""
    calls = [stub.Predict.future(predict_request("mlp", {"x": X}), timeout=120) for _ in range(4)]
    return in_flight_but_the_busy_one(calls)


def test_sigterm_finishes_accepted_calls_and_refuses_new_ones(
    model_repo: Path, tmp_path: Path
) -> None:
    gateway = start_gateway(_held_args(model_repo, tmp_path), tmp_path)
    try:
        with grpc.insecure_channel(gateway.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            held = _hold(stub)
            gateway.process.send_signal(signal.SIGTERM)
            _wait_not_serving(channel)
            # The listener is still open: a new call on the open channel is refused, retryably.
            try:
                stub.Predict(predict_request("mlp", {"x": X}), timeout=60)
                raise AssertionError("a call was accepted while draining")
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.UNAVAILABLE
                assert "shutting down" in (error.details() or "")
            for call in held:  # the open batch was sent at once; every held call gets its rows
                assert outputs_of(call.result(timeout=60))["probs"].shape == (1, 10)
        assert gateway.process.wait(timeout=60) == 0
    finally:
        gateway.stop()


def test_a_second_signal_cancels_what_still_runs(model_repo: Path, tmp_path: Path) -> None:
    """The held calls cannot finish (the worker is stopped): the second signal ends the wait."""
    gateway = start_gateway(_held_args(model_repo, tmp_path), tmp_path)
    try:
        with grpc.insecure_channel(gateway.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            (worker,) = worker_pids(gateway.pid)
            os.kill(worker, signal.SIGSTOP)
            held = _hold(stub)
            gateway.process.send_signal(signal.SIGTERM)
            _wait_not_serving(channel)
            gateway.process.send_signal(signal.SIGINT)
            codes = {call.exception(timeout=60).code() for call in held}
            assert codes <= {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED}
        assert gateway.process.wait(timeout=60) == 0
        assert "second stop signal" in gateway.log()
    finally:
        gateway.stop()


def test_sigterm_under_load_loses_nothing(model_repo: Path, tmp_path: Path) -> None:
    """8 client threads keep calling through the signal: every answer is OK or a retryable
    UNAVAILABLE (never CANCELLED), and the first 200 answers came before the signal."""
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--inline_runs=never",
    ]
    gateway = start_gateway([*args, "--shutdown_grace_seconds=30"], tmp_path)
    statuses: Counter[grpc.StatusCode] = Counter()
    lock = threading.Lock()
    enough = threading.Event()
    stop = threading.Event()

    def client() -> None:
        with grpc.insecure_channel(gateway.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            while not stop.is_set():
                try:
                    stub.Predict(predict_request("mlp", {"x": X}), timeout=30)
                    code = grpc.StatusCode.OK
                except grpc.RpcError as error:
                    code = error.code()
                with lock:
                    statuses[code] += 1
                    if sum(statuses.values()) >= 200:
                        enough.set()
                if code == grpc.StatusCode.UNAVAILABLE:
                    return

    threads = [threading.Thread(target=client) for _ in range(8)]
    try:
        for thread in threads:
            thread.start()
        assert enough.wait(timeout=120)
        gateway.process.send_signal(signal.SIGTERM)
        assert gateway.process.wait(timeout=60) == 0
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        gateway.stop()
    assert set(statuses) <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, statuses
    assert statuses[grpc.StatusCode.OK] >= 200


def test_rest_calls_are_refused_with_503_while_draining(model_repo: Path, tmp_path: Path) -> None:
    args = [*_held_args(model_repo, tmp_path), "--rest_api_port=-1"]
    with running_gateway(args, tmp_path) as gateway, grpc.insecure_channel(gateway.target) as ch:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        held = _hold(stub)
        gateway.process.send_signal(signal.SIGTERM)
        _wait_not_serving(ch)
        body = b'{"instances": [[' + b",".join([b"1"] * 64) + b"]]}"
        url = f"http://127.0.0.1:{gateway.rest_port}/v1/models/mlp:predict"
        try:
            urllib.request.urlopen(url, body, timeout=60)
            raise AssertionError("a REST call was accepted while draining")
        except urllib.error.HTTPError as error:
            assert error.code == 503
            assert error.headers["Retry-After"] == "1"
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{gateway.rest_port}/readyz", timeout=60)
            raise AssertionError("/readyz said ready while draining")
        except urllib.error.HTTPError as error:
            assert error.code == 503
        for call in held:
            assert outputs_of(call.result(timeout=60))["probs"].shape == (1, 10)


def test_rest_handlers_die_with_their_connections(model_repo: Path, tmp_path: Path) -> None:
    """Stalled chunked bodies whose clients left kept their handlers, and SIGTERM then waited the
    whole grace for "REST calls still running"; now they end when the connection does."""
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--inline_runs=never",  # runs go to the workers this test observes
        "--rest_api_port=-1",
        "--rest_api_body_timeout_seconds=600",
        f"--max_concurrent_requests={HELD}",
        "--shutdown_grace_seconds=600",
    ]
    stalled = (
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"fffff\r\n" + b"[" * 10_000  # a 1 MiB chunk, of which 10 kB ever arrive
    )
    gateway = start_gateway(args, tmp_path)
    try:
        sockets = [
            socket.create_connection(("127.0.0.1", gateway.rest_port), timeout=60)
            for _ in range(HELD)
        ]
        for sock in sockets:
            sock.sendall(stalled)
        # All three handlers are in flight, reading their bodies: the next call is refused.
        url = f"http://127.0.0.1:{gateway.rest_port}/v1/models/mlp:predict"
        for _ in range(1000):  # until the handlers have read the heads (a few 400s at most)
            try:
                urllib.request.urlopen(url, b"{}", timeout=60).close()
            except urllib.error.HTTPError as error:
                error.close()
                if error.code == 503:
                    break
        else:
            raise AssertionError("the stalled requests never counted as in flight")
        for sock in sockets:
            sock.close()
        gateway.process.send_signal(signal.SIGTERM)
        assert gateway.process.wait(timeout=120) == 0
        assert "still running" not in gateway.log()
    finally:
        gateway.stop()
