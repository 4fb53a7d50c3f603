"""The official tritonclient (its own process: sync and aio gRPC, sync and aio HTTP, JSON and
binary) against a server made of gateway.v2's codecs only (tests/support/triton_fake.py).

This proves the codecs wire-exact with the real client, and the harness the adapters' end-to-end
tests will use.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support import triton_client, triton_fake

X = np.array([[1.0, 2.5], [-3.0, 4.0]], np.float32)
S = np.array([b"ab", b"\x00\xff"], dtype=object)
S_TEXT = np.array([b"ab", "é".encode()], dtype=object)


def _infer(call_id: str, client: str, s: np.ndarray = S, **extra: Any) -> tuple[dict, dict]:
    entry, arrays = triton_client.plan_inputs(call_id, {"x": ("FP32", X), "s": ("BYTES", s)})
    return {
        "id": call_id,
        "client": client,
        "op": "infer",
        "model": "m",
        "inputs": entry,
        **extra,
    }, arrays


def _plan() -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    calls: list[dict[str, Any]] = []
    arrays: dict[str, np.ndarray] = {}
    for call, more in (
        _infer("grpc", "grpc", request_id="r1"),
        _infer("grpc_aio", "grpc_aio", version="stable", outputs=[{"name": "y"}]),
        _infer("http_binary", "http", request_id="r2"),
        _infer("http_aio", "http_aio", version="1", outputs=[{"name": "t"}, {"name": "y"}]),
        _infer(
            "http_json",
            "http",
            s=S_TEXT,
            binary=False,
            outputs=[{"name": "y", "binary": False}, {"name": "t", "binary": False}],
        ),
        _infer("grpc_unknown", "grpc", model="nope"),
        _infer("http_unknown", "http", model="nope"),
        _infer("grpc_bad_output", "grpc", outputs=[{"name": "nope"}]),
        _infer("grpc_bad_version", "grpc", version="7"),
    ):
        calls.append(call)
        arrays.update(more)
    wrong, more = triton_client.plan_inputs(
        "grpc_dtype", {"x": ("FP64", X.astype(np.float64)), "s": ("BYTES", S)}
    )
    arrays.update(more)
    calls += [
        {"id": "grpc_dtype", "client": "grpc", "op": "infer", "model": "m", "inputs": wrong},
        {"id": "live_grpc", "client": "grpc", "op": "is_server_live"},
        {"id": "live_http", "client": "http_aio", "op": "is_server_live"},
        {"id": "ready_m", "client": "grpc", "op": "is_model_ready", "model": "m"},
        {"id": "ready_9", "client": "http", "op": "is_model_ready", "model": "m", "version": "9"},
        {"id": "server_grpc", "client": "grpc_aio", "op": "server_metadata"},
        {"id": "server_http", "client": "http", "op": "server_metadata"},
        {"id": "meta_grpc", "client": "grpc", "op": "model_metadata", "model": "m"},
        {"id": "meta_http", "client": "http", "op": "model_metadata", "model": "m", "version": "1"},
        {"id": "shm_grpc", "client": "grpc", "op": "system_shm_status"},
        {"id": "shm_http", "client": "http", "op": "system_shm_status"},
        {"id": "cuda_grpc", "client": "grpc", "op": "cuda_shm_status"},
    ]
    return calls, arrays


async def _session(workdir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    calls, arrays = _plan()
    async with triton_fake.serving() as (grpc_target, http_target):
        return await triton_client.run_calls(grpc_target, http_target, calls, arrays, workdir)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    if importlib.util.find_spec("tritonclient") is None:
        pytest.skip("tritonclient is not installed")
    return asyncio.run(_session(tmp_path_factory.mktemp("triton")))


def _strings(entry: dict[str, Any]) -> list[bytes]:
    return [base64.b64decode(v) for v in entry["b64"]]


@pytest.mark.parametrize(
    ("call_id", "version", "names"),
    [
        ("grpc", 2, ["y", "t"]),
        ("grpc_aio", 1, ["y"]),
        ("http_binary", 2, ["y", "t"]),
        ("http_aio", 1, ["t", "y"]),
    ],
)
def test_infer_through_every_client(
    session: tuple[dict[str, Any], dict[str, Any]], call_id: str, version: int, names: list[str]
) -> None:
    results, outputs = session
    assert results[call_id]["ok"], results[call_id]
    result = results[call_id]["result"]
    assert list(result["outputs"]) == names
    assert result["response"]["model_name"] == "m"
    assert result["response"]["model_version"] == str(version)
    np.testing.assert_array_equal(outputs[f"{call_id}.y"], X * 2 + version)
    assert outputs[f"{call_id}.y"].dtype == np.float32
    assert result["outputs"]["y"] == {"datatype": "FP32", "shape": [2, 2]}
    if "t" in names:
        assert _strings(result["outputs"]["t"]) == [b"ba", b"\xff\x00"]


def test_request_ids_are_echoed(session: tuple[dict[str, Any], dict[str, Any]]) -> None:
    results, _ = session
    assert results["grpc"]["result"]["response"]["id"] == "r1"
    assert results["http_binary"]["result"]["response"]["id"] == "r2"
    assert "id" not in results["http_aio"]["result"]["response"]


def test_json_tensors_both_ways(session: tuple[dict[str, Any], dict[str, Any]]) -> None:
    results, outputs = session
    result = results["http_json"]["result"]
    y, t = result["response"]["outputs"]
    assert y["data"] == (X * 2 + 2).reshape(-1).tolist()  # JSON as asked
    assert t["parameters"] == {"binary_data_size": 12}  # "é" reversed is not UTF-8: binary
    np.testing.assert_array_equal(outputs["http_json.y"], X * 2 + 2)
    assert _strings(result["outputs"]["t"]) == [b"ba", "é".encode()[::-1]]


@pytest.mark.parametrize(
    ("call_id", "status", "message"),
    [
        ("grpc_unknown", "StatusCode.NOT_FOUND", "Request for unknown model: 'nope' is not found"),
        ("http_unknown", "404", "Request for unknown model: 'nope' is not found"),
        (
            "grpc_bad_version",
            "StatusCode.NOT_FOUND",
            "Request for unknown model: 'm' version 7 is not found",
        ),
        ("grpc_bad_output", "StatusCode.INVALID_ARGUMENT", "alias not found in signature: nope"),
        (
            "grpc_dtype",
            "StatusCode.INVALID_ARGUMENT",
            "input 'x' has datatype FP64 but the model expects FP32",
        ),
        ("shm_grpc", "StatusCode.UNIMPLEMENTED", "shared-memory extension is not supported"),
        ("shm_http", "501", "shared-memory extension is not supported"),
        ("cuda_grpc", "StatusCode.UNIMPLEMENTED", "Method not implemented!"),
    ],
)
def test_errors_reach_the_client(
    session: tuple[dict[str, Any], dict[str, Any]], call_id: str, status: str, message: str
) -> None:
    result = session[0][call_id]
    assert not result["ok"]
    assert result["status"] == status
    assert message in result["message"]


def test_health_and_metadata(session: tuple[dict[str, Any], dict[str, Any]]) -> None:
    results, _ = session
    assert results["live_grpc"]["result"] is True
    assert results["live_http"]["result"] is True
    assert results["ready_m"]["result"] is True
    assert results["ready_9"]["result"] is False
    for call_id in ("server_grpc", "server_http"):
        assert results[call_id]["result"]["name"] == "tensorgate"
        assert "binary_tensor_data" in results[call_id]["result"]["extensions"]
    expected = {
        "name": "m",
        "versions": ["1", "2"],
        "platform": "onnx_onnxv1",
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [-1, 2]},
            {"name": "s", "datatype": "BYTES", "shape": [-1]},
        ],
        "outputs": [
            {"name": "y", "datatype": "FP32", "shape": [-1, 2]},
            {"name": "t", "datatype": "BYTES", "shape": [-1]},
        ],
    }
    assert results["meta_http"]["result"] == expected
    grpc_meta = results["meta_grpc"]["result"]  # protobuf's JSON: int64 as strings
    assert grpc_meta["inputs"][0] == {"name": "x", "datatype": "FP32", "shape": ["-1", "2"]}
    assert grpc_meta["versions"] == ["1", "2"] and grpc_meta["platform"] == "onnx_onnxv1"
