"""A front end that stops answering (really SIGSTOPped) is killed and replaced, and the model
lifecycle never waits on it: ``--frontends=2`` with a small injected liveness bound.

The bound is ``--frontend_ping_interval_seconds`` + ``--frontend_ping_timeout_seconds``; the
calls below have deadlines far beyond it, so they pass only if the supervisor stops waiting for
the stopped front end (without the bound they wait until it is resumed).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
from pathlib import Path

import numpy as np

from gateway._pb.tensorflow_serving.apis import (
    model_management_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)
from tests.support.frontends import reach_each
from tests.support.gateway_proc import front_end_pids, running_gateway, wait_gone
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.lifecycle import config_text, reload_request
from tests.support.waits import until

WAIT_S = 60.0
LIVENESS = ["--frontend_ping_interval_seconds=0.2", "--frontend_ping_timeout_seconds=2"]


def _post(connection: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    connection.request("POST", path, body=b"", headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read()


def test_a_stopped_front_end_is_replaced_and_reload_and_unload_answer_meanwhile(
    model_repo: Path, tmp_path: Path
) -> None:
    config = tmp_path / "models.config"
    config.write_text(config_text(f"mlp:{model_repo / 'mlp'}"))
    args = [
        f"--model_config_file={config}",
        "--enable_model_management_api",
        f"--management_base_path_dirs={model_repo},{tmp_path}",
        "--workers=1",
        "--file_system_poll_wait_seconds=0",
        "--rest_api_port=-1",
        "--frontends=2",
        "--tensorflow_intra_op_parallelism=1",
        *LIVENESS,
    ]
    with running_gateway(args, tmp_path) as gateway, reach_each(gateway) as reached:
        fronts, channels, rests = reached
        victim, survivor = fronts
        channel, rest = channels[survivor], rests[survivor]
        os.kill(victim, signal.SIGSTOP)
        try:
            both = config_text(f"mlp:{model_repo / 'mlp'}", f"add_two:{model_repo / 'add_two'}")
            stub = model_service_pb2_grpc.ModelServiceStub(channel)
            answer = stub.HandleReloadConfigRequest(reload_request(both), timeout=WAIT_S)
            assert isinstance(answer, model_management_pb2.ReloadConfigResponse)
            ones = np.ones((1, 3), np.float32)
            request = predict_request("add_two", {"a": ones, "b": 2 * ones})
            predict = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict
            assert outputs_of(predict(request, timeout=WAIT_S))["sum"].tolist() == [[3.0] * 3]
            assert _post(rest, "/v2/repository/models/add_two/unload")[0] == 200
            assert wait_gone(victim, WAIT_S), "the stopped front end was not killed"
            until(lambda: len(set(front_end_pids(gateway.pid)) - {survivor}) == 1, "a new one")
            assert "did not answer a ping" in gateway.log()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGCONT)
