"""Config changes as a user makes them, through a real ``--frontends=2`` gateway: what the
config-file poll applies reaches every front end, and V2's repository calls do what they answer.

Waits are on states the gateway publishes (answers of each front end, bounded), or, to know
the config-file poll has read the file again, on the file's access time (the kernel updates it
on the first read after its modification time: ``relatime``).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.frontends import reach_each
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import predict_request
from tests.support.waits import until

WAIT_S = 60.0
X = np.ones((1, 64), np.float32)
V2_INFER = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 64], "data": [1.0] * 64}]}


def _request(
    connection: http.client.HTTPConnection, method: str, path: str, body: object = None
) -> tuple[int, str]:
    data = b"" if body is None else json.dumps(body).encode()
    connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read().decode()


def _config(path: Path, *entries: str) -> None:
    path.write_text("model_config_list {\n" + "\n".join(entries) + "\n}\n")


Fleet = tuple[GatewayProcess, dict[int, grpc.Channel], dict[int, http.client.HTTPConnection]]
"""The gateway, a gRPC channel and a REST connection to each front end (by pid)."""


@contextmanager
def _fleet(tmp_path: Path, config: Path, *extra: str) -> Iterator[Fleet]:
    args = [
        f"--model_config_file={config}",
        "--model_config_file_poll_wait_seconds=1",
        "--file_system_poll_wait_seconds=0",
        "--workers=1",
        "--frontends=2",
        "--tensorflow_intra_op_parallelism=1",
        "--rest_api_port=-1",
        *extra,
    ]
    with running_gateway(args, tmp_path) as gateway, reach_each(gateway) as (_, channels, rests):
        yield gateway, channels, rests


def _version_of(channel: grpc.Channel, **spec: object) -> int:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    response = stub.Predict(predict_request("mlp", {"x": X}, **spec), timeout=WAIT_S)
    return int(response.model_spec.version.value)


def _has_version(channel: grpc.Channel, label: str, version: int) -> bool:
    return _version_of(channel, label=label) == version


def _answers(connection: http.client.HTTPConnection, path: str, status: int) -> bool:
    return _request(connection, "GET", path)[0] == status


def test_a_label_move_and_a_model_with_no_base_path_yet_reach_every_front_end(
    model_repo: Path, tmp_path: Path
) -> None:
    config = tmp_path / "models.config"
    mlp = f'name: "mlp" base_path: "{model_repo / "mlp"}" model_version_policy {{ all {{}} }}'
    _config(config, f'config {{ {mlp} version_labels {{ key: "stable" value: 1 }} }}')
    extra = "--allow_version_labels_for_unavailable_models"
    with _fleet(tmp_path, config, extra) as (_, channels, rests):
        assert {_version_of(c, label="stable") for c in channels.values()} == {1}
        _config(config, f'config {{ {mlp} version_labels {{ key: "stable" value: 2 }} }}')
        for channel in channels.values():
            until(partial(_has_version, channel, "stable", 2), "stable moved to 2")
        ghost = f'config {{ name: "ghost" base_path: "{tmp_path / "not_yet"}" }}'
        _config(config, f'config {{ {mlp} version_labels {{ key: "stable" value: 2 }} }}', ghost)
        for rest in rests.values():
            until(partial(_answers, rest, "/readyz", 503), "/readyz 503")
            assert _request(rest, "GET", "/v2/models/ghost/ready")[0] != 200
            status, body = _request(rest, "POST", "/v2/models/ghost/infer", V2_INFER)
            assert "'ghost' has no available versions" in body, (status, body)


def _read_again(path: Path) -> None:
    """Return once the gateway has read ``path`` after this call (its access time passed its
    modification time, set back just before)."""
    now = time.time()
    os.utime(path, (now - 20, now - 10))
    until(lambda: os.stat(path).st_atime > os.stat(path).st_mtime, f"{path} read again")


def test_v2_repository_unload_stays_and_load_polls_disk_and_retries_a_failed_version(
    model_repo: Path, tmp_path: Path
) -> None:
    base = tmp_path / "mlp"
    shutil.copytree(model_repo / "mlp" / "1", base / "1")
    config = tmp_path / "models.config"
    _config(config, f'config {{ name: "mlp" base_path: "{base}" }}')
    extra = (
        "--enable_model_management_api",
        f"--management_base_path_dirs={tmp_path}",
        "--max_num_load_retries=0",
    )
    with _fleet(tmp_path, config, *extra) as (_, channels, rests):
        (a, b) = rests.values()
        assert _request(a, "POST", "/v2/repository/models/mlp/unload")[0] == 200
        _read_again(config)
        _read_again(config)  # the first read's round (and any apply) has ended
        assert _request(b, "GET", "/v2/models/mlp/ready")[0] != 200, "the poll undid the unload"
        assert _request(b, "POST", "/v2/repository/models/mlp/load")[0] == 200
        # A new version on disk, polling off: a load of the served model picks it up.
        shutil.copytree(model_repo / "mlp" / "2", base / "2")
        assert _request(a, "POST", "/v2/repository/models/mlp/load")[0] == 200
        assert {_version_of(c) for c in channels.values()} == {2}
        # A version whose load fails: the load answers the error; once fixed, a load retries it.
        (base / "3").mkdir()
        (base / "3" / "model.onnx").write_bytes(b"not an onnx model")
        status, body = _request(b, "POST", "/v2/repository/models/mlp/load")
        assert status == 400 and "load failed for model 'mlp'" in body, (status, body)
        assert {_version_of(c) for c in channels.values()} == {2}
        shutil.copy(model_repo / "mlp" / "1" / "model.onnx", base / "3" / "model.onnx")
        assert _request(a, "POST", "/v2/repository/models/mlp/load")[0] == 200
        assert {_version_of(c) for c in channels.values()} == {3}


@pytest.fixture(autouse=True)
def _relatime(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.write_text("x")
    now = time.time()
    os.utime(probe, (now - 20, now - 10))
    probe.read_text()
    if not os.stat(probe).st_atime > os.stat(probe).st_mtime:
        pytest.skip("this file system does not update access times (noatime)")
