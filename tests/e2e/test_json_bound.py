"""The REST JSON bound through a real gateway: a body whose JSON is over
``--rest_api_max_json_bytes`` is refused before it is parsed (parsing holds the front end's loop),
on both REST APIs (V2's repository routes too); a V2 binary request whose JSON header is small
serves whatever its raw size."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.rest import post

LIMIT = 4096
ROWS = 40
"""40 rows of 64 float32: about 8 KB of JSON, over the limit; 10 KB raw."""


@pytest.fixture(scope="module")
def gateway(model_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--rest_api_port=-1",
        f"--rest_api_max_json_bytes={LIMIT}",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path_factory.mktemp("json-bound")) as process:
        yield process


def rows(n: int) -> list[list[float]]:
    return np.full((n, 64), 0.25, np.float32).tolist()


def test_tf_serving_json_over_the_bound_is_400_before_parsing(gateway: GatewayProcess) -> None:
    url = f"http://127.0.0.1:{gateway.rest_port}/v1/models/mlp:predict"
    small = post(url, {"instances": rows(1)})
    assert small.status == 200, small.body
    big = post(url, {"instances": rows(ROWS)})
    assert big.status == 400
    assert "--rest_api_max_json_bytes" in json.loads(big.body)["error"]


def test_v2_json_over_the_bound_is_400_and_binary_tensors_are_not_json(
    gateway: GatewayProcess,
) -> None:
    url = f"http://127.0.0.1:{gateway.rest_port}/v2/models/mlp/infer"
    data = [v for row in rows(ROWS) for v in row]
    document = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [ROWS, 64], "data": data}]}
    big = post(url, document)
    assert big.status == 400
    assert "--rest_api_max_json_bytes" in json.loads(big.body)["error"]
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "x",
                    "datatype": "FP32",
                    "shape": [ROWS, 64],
                    "parameters": {"binary_data_size": ROWS * 64 * 4},
                }
            ]
        }
    ).encode()
    raw = np.full((ROWS, 64), 0.25, np.float32).tobytes()
    binary = post(
        url,
        header + raw,
        headers={
            "Inference-Header-Content-Length": str(len(header)),
            "Content-Type": "application/octet-stream",
        },
    )
    assert binary.status == 200, binary.body


def test_v2_repository_json_over_the_bound_is_refused_as_infer_is(gateway: GatewayProcess) -> None:
    base = f"http://127.0.0.1:{gateway.rest_port}/v2"
    data = [v for row in rows(ROWS) for v in row]
    document = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [ROWS, 64], "data": data}]}
    infer = post(f"{base}/models/mlp/infer", document)
    assert infer.status == 400
    refusal = json.loads(infer.body)["error"]
    assert "--rest_api_max_json_bytes" in refusal
    for path in ("repository/index", "repository/models/mlp/load", "repository/models/mlp/unload"):
        big = post(f"{base}/{path}", document)
        assert (big.status, json.loads(big.body)["error"]) == (400, refusal), path
    small = post(f"{base}/repository/index", {})
    assert small.status == 200, small.body
