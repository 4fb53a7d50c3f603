"""The Open Inference Protocol through a real gateway, driven by the official ``tritonclient`` in
its own process (gRPC sync and aio, HTTP sync and aio; binary and JSON tensors): answers equal
ONNX Runtime's and the TF Serving API's for the same inputs; metadata, health, statistics and
the repository index; a V2 and a TF Serving request for one model share one batch; metrics are
kept per protocol."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support import triton_client
from tests.support.gateway_proc import GatewayProcess
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.onnx_models import IDENTITY_DTYPES
from tests.support.ort import run_reference
from tests.support.triton_gateway import (
    Calls,
    V2Gateway,
    sample,
    scrape,
    targets,
    v2_gateway,  # noqa: F401 (the session fixture)
)

RNG = np.random.default_rng(7)
X3 = RNG.standard_normal((3, 64)).astype(np.float32)
X2 = RNG.standard_normal((2, 64)).astype(np.float32)
DATATYPES = {
    "float32": "FP32",
    "float64": "FP64",
    "float16": "FP16",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "uint8": "UINT8",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "uint64": "UINT64",
    "bool": "BOOL",
    "string": "BYTES",
}
MLP_CALLS = {  # call id → (client, version asked, version served, input, outputs asked)
    "grpc": ("grpc", "", 2, X3, None),
    "grpc_aio": ("grpc_aio", "stable", 1, X2, ["probs"]),
    "http": ("http", "1", 1, X3, None),
    "http_json": ("http", "", 2, X2, ["logits", "probs"]),
    "http_aio": ("http_aio", "canary", 2, X3, ["probs", "logits"]),
}


def _identity_inputs() -> dict[str, tuple[str, np.ndarray]]:
    """A [2, 2] tensor of each datatype, its extremes among its values (BYTES: UTF-8, as ONNX
    Runtime's string tensors must be)."""
    values: dict[str, tuple[str, np.ndarray]] = {}
    for dtype, datatype in DATATYPES.items():
        if dtype == "string":
            array = np.array([[b"ab", "é".encode()], [b"", b"z"]], dtype=object)
        elif dtype == "bool":
            array = np.array([[True, False], [False, True]])
        else:
            info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype)
            array = np.array([[info.min, info.max], [0, 1]], dtype=dtype)
        values[f"in_{dtype}"] = (datatype, array)
    assert set(IDENTITY_DTYPES) == set(DATATYPES)
    return values


def _plan() -> Calls:
    plan = Calls().op("stats_before", "grpc", "statistics")
    for call_id, (client, version, _, x, outputs) in MLP_CALLS.items():
        extra: dict[str, Any] = {"version": version, "request_id": f"id-{call_id}"}
        binary = call_id != "http_json"
        if outputs is not None:
            extra["outputs"] = [{"name": name, "binary": binary} for name in outputs]
        plan.infer(call_id, client, "mlp", {"x": ("FP32", x)}, binary=binary, **extra)
    for client, binary in (("grpc", True), ("http", True), ("http_aio", False)):
        call_id = f"identities_{client}_{'binary' if binary else 'json'}"
        plan.infer(call_id, client, "identities", _identity_inputs(), binary=binary)
    versioned = {"model": "mlp", "version": "1"}
    return (
        plan.op("stats_after", "grpc", "statistics")
        .op("stats_mlp_http", "http", "statistics", model="mlp")
        .op("stats_v1_grpc", "grpc_aio", "statistics", **versioned)
        .op("live_grpc", "grpc", "is_server_live")
        .op("live_http", "http_aio", "is_server_live")
        .op("ready_grpc", "grpc_aio", "is_server_ready")
        .op("ready_http", "http", "is_server_ready")
        .op("model_ready", "grpc", "is_model_ready", model="mlp")
        .op("label_ready", "http", "is_model_ready", model="mlp", version="canary")
        .op("version_9_ready", "http", "is_model_ready", model="mlp", version="9")
        .op("nope_ready", "grpc", "is_model_ready", model="nope")
        .op("server_grpc", "grpc_aio", "server_metadata")
        .op("server_http", "http", "server_metadata")
        .op("meta_grpc", "grpc", "model_metadata", model="mlp")
        .op("meta_http", "http_aio", "model_metadata", **versioned)
        .op("index_grpc", "grpc", "repository_index")
        .op("index_http", "http", "repository_index")
    )


@pytest.fixture(scope="module")
def answers(
    v2_gateway: V2Gateway,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return _plan().run(v2_gateway.process, tmp_path_factory.mktemp("v2_session"))


def _tf_predict(gateway: GatewayProcess, x: np.ndarray, version: int) -> dict[str, np.ndarray]:
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(predict_request("mlp", {"x": x}, version=version), timeout=60)
    return outputs_of(response)


@pytest.mark.parametrize("call_id", list(MLP_CALLS))
def test_answers_equal_onnx_runtime_and_the_tf_serving_api(
    answers: tuple[dict[str, Any], dict[str, np.ndarray]],
    v2_gateway: V2Gateway,  # noqa: F811
    call_id: str,
) -> None:
    results, outputs = answers
    _, _, served, x, asked = MLP_CALLS[call_id]
    assert results[call_id]["ok"], results[call_id]
    result = results[call_id]["result"]
    names = asked or ["logits", "probs"]
    assert list(result["outputs"]) == names
    response = result["response"]
    assert response["model_name"] == "mlp"
    assert response["model_version"] == str(served)
    assert response["id"] == f"id-{call_id}"
    reference = run_reference(v2_gateway.model("mlp", served), {"x": x})
    tf_serving = _tf_predict(v2_gateway.process, x, served)
    for name in names:
        got = outputs[f"{call_id}.{name}"]
        assert got.dtype == np.float32 and got.shape == (len(x), 10)
        assert result["outputs"][name] == {"datatype": "FP32", "shape": [len(x), 10]}
        np.testing.assert_allclose(got, reference[name], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got, tf_serving[name])
    if call_id == "http_json":  # JSON asked for: the values travel as JSON numbers
        assert all("data" in o and "parameters" not in o for o in response["outputs"])


@pytest.mark.parametrize(
    "call_id", ["identities_grpc_binary", "identities_http_binary", "identities_http_aio_json"]
)
def test_every_datatype_round_trips(
    answers: tuple[dict[str, Any], dict[str, np.ndarray]], call_id: str
) -> None:
    results, outputs = answers
    assert results[call_id]["ok"], results[call_id]
    result = results[call_id]["result"]
    sent = _identity_inputs()
    for dtype, datatype in DATATYPES.items():
        entry = result["outputs"][f"out_{dtype}"]
        assert entry["datatype"] == datatype and entry["shape"] == [2, 2]
        if dtype == "string":
            got = [base64.b64decode(v) for v in entry["b64"]]
            assert got == sent["in_string"][1].reshape(-1).tolist()
            continue
        array = outputs[f"{call_id}.out_{dtype}"]
        assert array.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(array, sent[f"in_{dtype}"][1])


def test_health_and_metadata(answers: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    results, _ = answers
    value = {call_id: r.get("result") for call_id, r in results.items()}
    assert value["live_grpc"] is True and value["live_http"] is True
    assert value["ready_grpc"] is True and value["ready_http"] is True
    assert value["model_ready"] is True and value["label_ready"] is True
    assert value["version_9_ready"] is False and value["nope_ready"] is False
    for call_id in ("server_grpc", "server_http"):
        assert value[call_id]["name"] == "tensorgate"
        assert value[call_id]["extensions"] == [
            "binary_tensor_data",
            "parameters",
            "statistics",
            "model_repository",
        ]
    expected = {
        "name": "mlp",
        "versions": ["1", "2"],
        "platform": "onnx_onnxv1",
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 64]}],
        "outputs": [
            {"name": "logits", "datatype": "FP32", "shape": [-1, 10]},
            {"name": "probs", "datatype": "FP32", "shape": [-1, 10]},
        ],
    }
    assert value["meta_http"] == expected
    grpc_meta = value["meta_grpc"]  # protobuf's JSON: int64 as strings
    assert grpc_meta["versions"] == ["1", "2"] and grpc_meta["platform"] == "onnx_onnxv1"
    assert grpc_meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": ["-1", "64"]}]


def test_repository_index(answers: tuple[dict[str, Any], dict[str, np.ndarray]]) -> None:
    results, _ = answers
    index = results["index_http"]["result"]
    ready = {(e["name"], e["version"]) for e in index if e["state"] == "READY"}
    assert {("mlp", "1"), ("mlp", "2"), ("identities", "1"), ("held", "1")} <= ready
    assert all(e["reason"] == "" for e in index if e["state"] == "READY")
    grpc_index = results["index_grpc"]["result"]["models"]
    assert {(e["name"], e["version"]) for e in grpc_index if e["state"] == "READY"} == ready


def _stats(entry: dict[str, Any], name: str, version: str) -> dict[str, Any]:
    (found,) = [s for s in entry["model_stats"] if (s["name"], s["version"]) == (name, version)]
    return found


def _count(stats: dict[str, Any], *path: str) -> int:
    value: Any = stats
    for key in path:
        value = value.get(key, {})
    return int(value or 0)  # protobuf's JSON leaves zeros out and writes uint64 as strings


def test_statistics_count_this_session_s_inferences(
    answers: tuple[dict[str, Any], dict[str, np.ndarray]],
) -> None:
    """Between "stats_before" and "stats_after" the session ran :data:`MLP_CALLS` one at a
    time: each request is its own run (batching with a zero timeout and an idle worker)."""
    results, _ = answers
    before, after = results["stats_before"]["result"], results["stats_after"]["result"]
    for version in (1, 2):
        served = [x for _, _, v, x, _ in MLP_CALLS.values() if v == version]
        old, new = _stats(before, "mlp", str(version)), _stats(after, "mlp", str(version))

        def grew(*path: str, old: dict[str, Any] = old, new: dict[str, Any] = new) -> int:
            return _count(new, *path) - _count(old, *path)

        assert grew("inference_count") == sum(len(x) for x in served)
        assert grew("execution_count") == len(served)
        for figure in ("success", "queue", "compute_infer"):
            assert grew("inference_stats", figure, "count") == len(served), figure
        assert grew("inference_stats", "compute_infer", "ns") > 0
        assert grew("inference_stats", "fail", "count") == 0
        assert _count(new, "last_inference") > 0
    http = _stats(results["stats_mlp_http"]["result"], "mlp", "2")
    assert http["inference_stats"]["compute_input"] == {"count": 0, "ns": 0}  # not kept
    assert {b["batch_size"] for b in http["batch_stats"]} >= {2, 3}
    only_v1 = results["stats_v1_grpc"]["result"]["model_stats"]
    assert [(s["name"], s["version"]) for s in only_v1] == [("mlp", "1")]


def _grown(before: str, after: str, name: str, **labels: str) -> float:
    return sample(after, name, **labels) - sample(before, name, **labels)


async def test_a_v2_and_a_tf_serving_request_share_one_batch(
    v2_gateway: V2Gateway,  # noqa: F811
    tmp_path: Path,
) -> None:
    """``held`` closes a batch only at 2 rows (else after 10 minutes): one TF Serving Predict and
    one V2 ModelInfer of one row each must form ONE run — were V2 queued apart, each would wait
    alone until its 60 s deadline."""
    gateway = v2_gateway.process
    x_tf, x_v2 = RNG.standard_normal((2, 1, 64)).astype(np.float32)
    plan = Calls().infer("v2", "grpc", "held", {"x": ("FP32", x_v2)}, client_timeout=60)
    grpc_target, http_target = targets(gateway)
    before = scrape(gateway)

    async with grpc.aio.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        tf_call = stub.Predict(predict_request("held", {"x": x_tf}), timeout=60)
        v2_call = triton_client.run_calls(
            grpc_target, http_target, plan.calls, plan.arrays, tmp_path
        )
        tf_response, (results, outputs) = await asyncio.gather(tf_call, v2_call)
    after = scrape(gateway)
    assert _grown(before, after, "tensorgate_worker_runs_total") == 1
    held = {"model_name": "held", "version": "1"}
    assert _grown(before, after, "tensorgate_batch_size_count", **held) == 1
    assert _grown(before, after, "tensorgate_batch_size_sum", **held) == 2
    assert results["v2"]["ok"], results["v2"]
    v2_outputs = {name: outputs[f"v2.{name}"] for name in ("logits", "probs")}
    for got, x in ((outputs_of(tf_response), x_tf), (v2_outputs, x_v2)):
        reference = run_reference(v2_gateway.model("held", 1), {"x": x})
        for name in ("logits", "probs"):
            np.testing.assert_allclose(got[name], reference[name], rtol=1e-5, atol=1e-6)


def test_metrics_are_kept_per_protocol(
    v2_gateway: V2Gateway,  # noqa: F811
    tmp_path: Path,
) -> None:
    """V2 calls show in tensorgate's own series under protocol="v2", never in TF Serving's."""
    gateway = v2_gateway.process
    plan = Calls()
    for i, client in enumerate(("grpc", "grpc_aio", "http")):
        plan.infer(f"c{i}", client, "mlp", {"x": ("FP32", X2)})
    before = scrape(gateway)
    results, _ = plan.run(gateway, tmp_path)
    after = scrape(gateway)
    assert all(r["ok"] for r in results.values()), results
    infer = {"api": "ModelInfer", "protocol": "v2", "model_name": "mlp"}
    duration = "tensorgate_request_duration_seconds_count"
    assert _grown(before, after, duration, entrypoint="GRPC", **infer) == 2
    assert _grown(before, after, duration, entrypoint="REST", **infer) == 1
    assert _grown(before, after, duration, protocol="tfserving") == 0
    for tf_series in ("request_count", "request_latency_count", "runtime_latency_count"):
        assert _grown(before, after, f":tensorflow:serving:{tf_series}") == 0, tf_series
    assert _grown(before, after, "tensorgate_compute_seconds_count", model_name="mlp") == 3
    assert 'tensorgate_requests_in_flight{entrypoint="GRPC",protocol="v2"} 0.0' in after


def test_reflection_lists_the_v2_service(v2_gateway: V2Gateway) -> None:  # noqa: F811
    with grpc.insecure_channel(v2_gateway.process.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (response,) = list(stub.ServerReflectionInfo(iter([request]), timeout=30))
    names = {s.name for s in response.list_services_response.service}
    assert {"inference.GRPCInferenceService", "tensorflow.serving.PredictionService"} <= names
