"""TF Serving's REST API (``/v1/``) end to end: real HTTP servers on port 0 with the TF Serving
routes in front of a real ServingCore, WorkerPool and ONNX worker, driven by aiohttp's client; the
same core behind a grpc.aio server for parity.

The servers run on their own uvloop in a background thread (as in the gateway, one loop serves
everything); each test talks to them over TCP from the test thread. The protocol-neutral server
core (probes, CORS, body and deadline bounds, stop) is tests/transport/http/test_server.py.
"""

from __future__ import annotations

import asyncio
import base64
import os
import queue
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import uvloop
from google.protobuf import json_format

from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)
from gateway.config.model_config import ModelSpecConfig
from gateway.errors import InvalidArgument
from gateway.serving.core import ModelRef, ServingCore
from gateway.tfserving import PROTOCOL
from gateway.tfserving.rest.routes import TfServingRest
from gateway.tfserving.surface import TfServingOptions, TfServingSurface
from gateway.transport.gate import Gate
from gateway.transport.grpc_services import register
from gateway.transport.http.front import HttpError
from gateway.transport.http.routes import UNKNOWN_API
from gateway.worker_pool.pool import WorkerPool
from tests.support import onnx_models, rest_models
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.onnx_models import IDENTITY_DTYPES
from tests.support.ort import run_reference
from tests.support.rest import get, http, post, tf_rest_server
from tests.support.stack import serving_stack

START_TIMEOUT_S = 120
ALT_TIMEOUT_MS = 300
ALT_MAX_BODY = 4096
ALT_MAX_ELEMENTS = 100


@dataclass
class Stack:
    """Base URLs of the servers, and what the tests inspect or disturb."""

    rest: str  # generous limits, no classify/regress hook
    alt: str  # small limits, a short deadline, the test hook
    grpc_target: str
    root: Path
    pool: WorkerPool
    core: ServingCore


async def _hook(
    method: str, ref: ModelRef, body: dict[str, Any], deadline: float
) -> dict[str, Any]:
    """Stands in for classify/regress: echoes what the route handed it."""
    echo = {"method": method, "model": ref.name, "version": ref.version, "label": ref.label}
    return {"results": [[["label", 0.5]]], "echo": echo, "body": body}


def _model(root: Path, name: str, **config: Any) -> ModelSpecConfig:
    return ModelSpecConfig(name=name, base_path=str(root / name), **config)


def _build_models(root: Path) -> list[ModelSpecConfig]:
    onnx_models.mlp(root / "mlp" / "1" / "model.onnx", seed=1)
    onnx_models.mlp(root / "mlp" / "2" / "model.onnx", seed=2)
    onnx_models.add_two(root / "add_two" / "7" / "model.onnx")
    onnx_models.scaled(root / "scaled" / "1" / "model.onnx", 2.0)
    onnx_models.identities(root / "identities" / "1" / "model.onnx")
    rest_models.strings(root / "strings" / "1" / "model.onnx")
    rest_models.scalar_sum(root / "scalar_sum" / "1" / "model.onnx")
    return [
        _model(root, "mlp", policy="all", labels={"stable": 1, "canary": 2}),
        *(
            _model(root, name)
            for name in ("add_two", "scaled", "identities", "strings", "scalar_sum")
        ),
    ]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("rest_models")
    specs = _build_models(root)
    started: queue.Queue[Stack | BaseException] = queue.Queue()
    failures: list[BaseException] = []
    done: list[Callable[[], None]] = []

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        finished = asyncio.Event()
        try:
            async with serving_stack(specs) as serving:
                await _serve(serving.pool, serving.core, loop, finished)
        except BaseException as exc:
            failures.append(exc)
            started.put(exc)

    async def _serve(
        pool: WorkerPool,
        core: ServingCore,
        loop: asyncio.AbstractEventLoop,
        finished: asyncio.Event,
    ) -> None:
        rest = tf_rest_server(core)
        alt = tf_rest_server(
            core,
            timeout_ms=ALT_TIMEOUT_MS,
            max_body_bytes=ALT_MAX_BODY,
            max_elements=ALT_MAX_ELEMENTS,
            classify_regress=_hook,
        )
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        options = TfServingOptions(max_elements=2**20, max_request_bytes=2**31 - 1)
        register(server, TfServingSurface(core, options).grpc_services(), Gate(), None)
        grpc_port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        rest_port = await rest.start("127.0.0.1", 0)
        alt_port = await alt.start("127.0.0.1", 0)

        def finish() -> None:
            loop.call_soon_threadsafe(finished.set)

        done.append(finish)
        started.put(
            Stack(
                rest=f"http://127.0.0.1:{rest_port}",
                alt=f"http://127.0.0.1:{alt_port}",
                grpc_target=f"127.0.0.1:{grpc_port}",
                root=root,
                pool=pool,
                core=core,
            )
        )
        await finished.wait()
        await rest.stop(5)
        await alt.stop(5)
        await server.stop(None)

    thread = threading.Thread(target=uvloop.run, args=(serve(),), name="rest-e2e")
    thread.start()
    try:
        result = started.get(timeout=START_TIMEOUT_S)
        if isinstance(result, BaseException):
            raise result
        yield result
    finally:
        for stop in done:
            stop()
        thread.join(START_TIMEOUT_S)
    assert not thread.is_alive(), "the server thread did not stop"
    assert not failures, failures


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def channel(stack: Stack) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(stack.grpc_target) as ch:
        yield ch


# -- predict ---------------------------------------------------------------------------------------
def test_row_and_columnar_single_input_two_outputs(stack: Stack) -> None:
    x = np.random.default_rng(3).standard_normal((3, 64)).astype(np.float32)
    expected = run_reference(stack.root / "mlp" / "2" / "model.onnx", {"x": x})
    row = post(f"{stack.rest}/v1/models/mlp:predict", {"instances": x.tolist()})
    assert row.status == 200, row.body
    assert row.headers["Content-Type"] == "application/json"
    predictions = row.json()["predictions"]
    assert len(predictions) == 3
    assert all(set(p) == {"logits", "probs"} for p in predictions)
    for name in ("logits", "probs"):
        got = np.array([p[name] for p in predictions], np.float32)
        np.testing.assert_array_equal(got, expected[name])
    body = {"signature_name": "serving_default", "inputs": {"x": x.tolist()}}
    columnar = post(f"{stack.rest}/v1/models/mlp:predict", body)
    assert columnar.status == 200, columnar.body
    outputs = columnar.json()["outputs"]
    assert set(outputs) == {"logits", "probs"}
    for name in ("logits", "probs"):
        np.testing.assert_array_equal(np.array(outputs[name], np.float32), expected[name])


def test_single_output_drops_its_name(stack: Stack) -> None:
    url = f"{stack.rest}/v1/models/scaled:predict"
    assert post(url, {"instances": [[1, 2], [3, 4.5]]}).json() == {
        "predictions": [[2.0, 4.0], [6.0, 9.0]]
    }
    assert post(url, {"inputs": [[1, 2]]}).json() == {"outputs": [[2.0, 4.0]]}


def test_row_and_columnar_multiple_inputs_and_outputs(stack: Stack) -> None:
    url = f"{stack.rest}/v1/models/add_two:predict"
    rows = [{"a": [1, 2, 3], "b": [0.5, 0.5, 0.5]}, {"a": [4, 5, 6], "b": [1, 1, 1]}]
    assert post(url, {"instances": rows}).json() == {
        "predictions": [
            {"sum": [1.5, 2.5, 3.5], "diff": [0.5, 1.5, 2.5]},
            {"sum": [5.0, 6.0, 7.0], "diff": [3.0, 4.0, 5.0]},
        ]
    }
    columns = {"a": [[1, 2, 3]], "b": [[3, 2, 1]]}
    assert post(url, {"inputs": columns}).json() == {
        "outputs": {"sum": [[4.0, 4.0, 4.0]], "diff": [[-2.0, 0.0, 2.0]]}
    }


def test_scalar_output_needs_the_columnar_format(stack: Stack) -> None:
    url = f"{stack.rest}/v1/models/scalar_sum:predict"
    assert post(url, {"inputs": [1, 2, 3.5]}).json() == {"outputs": 6.5}
    reply = post(url, {"instances": [1, 2, 3.5]})
    assert reply.status == 400
    assert reply.error().startswith("Tensor name: total has no shape information")


def test_b64_in_and_bytes_outputs_out(stack: Stack) -> None:
    url = f"{stack.rest}/v1/models/strings:predict"
    text = "héllo wörld"
    reply = post(url, {"instances": [{"b64": b64(text.encode())}, "plain"]})
    assert reply.status == 200, reply.body
    assert reply.json() == {
        "predictions": [
            {"text_out": text, "text_bytes": {"b64": b64(text.encode())}},
            {"text_out": "plain", "text_bytes": {"b64": b64(b"plain")}},
        ]
    }
    reply = post(url, {"inputs": {"text": ["a", {"b64": b64(b"b")}]}})
    assert reply.json() == {
        "outputs": {"text_out": ["a", "b"], "text_bytes": [{"b64": "YQ=="}, {"b64": "Yg=="}]}
    }


def test_nan_and_infinity_in_and_out(stack: Stack) -> None:
    body = b'{"instances": [[NaN, Infinity], [-Infinity, 1.5]]}'
    reply = post(f"{stack.rest}/v1/models/scaled:predict", body)
    assert reply.status == 200, reply.body
    assert reply.body == b'{"predictions":[[NaN,Infinity],[-Infinity,3.0]]}'


def _sample(dtype: str) -> np.ndarray:
    if dtype == "string":
        return np.array([["a", "été"], ["", "long " * 5]], dtype=object)
    if dtype == "bool":
        return np.array([[True, False], [False, True]])
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return np.array([[info.min, info.max], [0, 1]], dtype=dtype)
    return np.array([[np.nan, np.inf], [-np.inf, 0.5]], dtype=dtype)


def test_every_dtype_round_trips(stack: Stack) -> None:
    inputs = {f"in_{d}": _sample(d) for d in IDENTITY_DTYPES}
    body = {"inputs": {name: value.tolist() for name, value in inputs.items()}}
    reply = post(f"{stack.rest}/v1/models/identities:predict", body)
    assert reply.status == 200, reply.body
    outputs = reply.json()["outputs"]
    for dtype in IDENTITY_DTYPES:
        sent = inputs[f"in_{dtype}"]
        got = np.array(outputs[f"out_{dtype}"], dtype=sent.dtype)
        np.testing.assert_array_equal(got, sent)


@pytest.mark.parametrize(
    ("prefix", "verb", "version"),
    [
        ("/v1/models/mlp", ":predict", 2),
        ("/v1/models/mlp/versions/1", ":predict", 1),
        ("/v1/models/mlp/versions/2", ":predict", 2),
        ("/v1/models/mlp/labels/stable", ":predict", 1),
        ("/v1/models/mlp/labels/canary", ":predict", 2),
        ("/V1/MODELS/mlp/VERSIONS/1", ":PREDICT", 1),
        ("/v1/Models/mlp/Labels/canary", ":Predict", 2),
    ],
)
def test_every_path_form(stack: Stack, prefix: str, verb: str, version: int) -> None:
    x = np.ones((1, 64), np.float32)
    expected = run_reference(stack.root / "mlp" / str(version) / "model.onnx", {"x": x})
    reply = post(f"{stack.rest}{prefix}{verb}", {"instances": x.tolist()})
    assert reply.status == 200, reply.body
    logits = np.array(reply.json()["predictions"][0]["logits"], np.float32)
    np.testing.assert_array_equal(logits, expected["logits"][0])
    statuses = get(f"{stack.rest}{prefix}").json()["model_version_status"]
    listed = [s["version"] for s in statuses]
    assert listed == (["1", "2"] if prefix.lower() == "/v1/models/mlp" else [str(version)])
    metadata = get(f"{stack.rest}{prefix}/metadata").json()
    assert metadata["model_spec"] == {"name": "mlp", "signature_name": "", "version": str(version)}
    for method in ("classify", "regress"):
        reply = post(f"{stack.rest}{prefix}:{method}", {"examples": [{}]})
        assert reply.status == 501
        assert reply.error() == f"{method.capitalize()} is not implemented yet by tensorgate"


# -- status, metadata, parity with gRPC ------------------------------------------------------------
def test_status_json_as_tf_serving(stack: Stack, channel: grpc.Channel) -> None:
    reply = get(f"{stack.rest}/v1/models/mlp")
    assert reply.status == 200
    ok = {"error_code": "OK", "error_message": ""}
    assert reply.json() == {
        "model_version_status": [
            {"version": "1", "state": "AVAILABLE", "status": ok},
            {"version": "2", "state": "AVAILABLE", "status": ok},
        ]
    }
    stub = model_service_pb2_grpc.ModelServiceStub(channel)
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "mlp"
    response = stub.GetModelStatus(request, timeout=30)
    assert [s.version for s in response.model_version_status] == [1, 2]


@pytest.mark.parametrize("model", ["mlp", "add_two", "strings", "identities"])
def test_metadata_json_as_tf_serving_and_as_grpc(
    stack: Stack, channel: grpc.Channel, model: str
) -> None:
    reply = get(f"{stack.rest}/v1/models/{model}/metadata")
    assert reply.status == 200
    document = reply.json()
    assert set(document) == {"model_spec", "metadata"}
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = model
    response = stub.GetModelMetadata(request, timeout=30)
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    assert response.metadata["signature_def"].Unpack(signature_map)
    fields: dict[str, Any] = {
        "always_print_fields_with_no_presence": True,
        "preserving_proto_field_name": True,
    }
    assert document == {
        "model_spec": json_format.MessageToDict(response.model_spec, **fields),
        "metadata": {"signature_def": json_format.MessageToDict(signature_map, **fields)},
    }
    serving = document["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert serving["method_name"] == "tensorflow/serving/predict"
    assert all("dtype" in info and "tensor_shape" in info for info in serving["inputs"].values())


@pytest.mark.parametrize(
    ("model", "inputs"),
    [
        ("mlp", {"x": np.random.default_rng(9).standard_normal((4, 64)).astype(np.float32)}),
        ("add_two", {"a": np.eye(3, dtype=np.float32), "b": np.full((3, 3), 0.1, np.float32)}),
        ("scaled", {"x": np.array([[np.nan, 1e-30], [np.inf, -3.3]], np.float32)}),
        ("strings", {"text": np.array(["é", "", "x y"], dtype=object)}),
    ],
)
def test_rest_and_grpc_answer_identically(
    stack: Stack, channel: grpc.Channel, model: str, inputs: dict[str, np.ndarray]
) -> None:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    as_bytes = {
        k: np.array([s.encode() for s in v], dtype=object) if v.dtype == object else v
        for k, v in inputs.items()
    }
    by_grpc = outputs_of(stub.Predict(predict_request(model, as_bytes), timeout=30))
    body = {"inputs": {name: value.tolist() for name, value in inputs.items()}}
    reply = post(f"{stack.rest}/v1/models/{model}:predict", body)
    assert reply.status == 200, reply.body
    outputs = reply.json()["outputs"]
    if len(by_grpc) == 1:
        outputs = {next(iter(by_grpc)): outputs}
    assert set(outputs) == set(by_grpc)
    for name, expected in by_grpc.items():
        if expected.dtype == object:
            decode = (
                (lambda v: base64.b64decode(v["b64"])) if name.endswith("_bytes") else str.encode
            )
            got = np.array([decode(v) for v in outputs[name]], dtype=object)
        else:
            got = np.array(outputs[name], dtype=expected.dtype)
        np.testing.assert_array_equal(got, expected)


# -- errors ----------------------------------------------------------------------------------------
X_ROW = {"instances": [[0.5] * 64]}


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        (
            "POST",
            "/v1/models/nope:predict",
            X_ROW,
            404,
            "Servable not found for request: Latest(nope)",
        ),
        ("POST", "/v1/models/mlp/versions/9:predict", X_ROW, 404, "Specific(mlp, 9)"),
        (
            "POST",
            "/v1/models/mlp/labels/x:predict",
            X_ROW,
            400,
            "Unrecognized servable version label",
        ),
        ("GET", "/v1/models/nope", None, 404, "Could not find any versions of model nope"),
        ("GET", "/v1/models/mlp/versions/9", None, 404, "Could not find version 9 of model mlp"),
        ("GET", "/v1/models/nope/metadata", None, 404, "Servable not found for request"),
        ("GET", "/v1/models", None, 400, "Missing model name in request."),
        ("GET", "/v1/models/mlp/versions/1/labels/stable", None, 400, "Malformed request: GET "),
        ("POST", "/v1/models/mlp/versions/1/labels/x:predict", X_ROW, 400, "Malformed request"),
        ("POST", "/v1/models/mlp", X_ROW, 400, "Malformed request: POST /v1/models/mlp"),
        ("DELETE", "/v1/models/mlp", None, 405, "this path answers GET, not DELETE"),
        ("OPTIONS", "/v1/models/mlp:predict", None, 405, "answers POST, not OPTIONS"),
        ("PUT", "/v1/models/mlp/labels/x", None, 405, "answers GET, not PUT"),
        ("DELETE", "/v1/models/mlp/versions/x", None, 400, "Malformed request: DELETE"),
        ("GET", "/v2/models/mlp", None, 404, "Not found: no route for GET on this path"),
        ("POST", "/v1/models/mlp:predict", b"{", 400, "JSON Parse error: Expecting"),
        ("POST", "/v1/models/mlp:predict", b"", 400, "JSON Parse error: The document is empty"),
        ("POST", "/v1/models/mlp:predict", [1], 400, "JSON Value: [1] Is not object"),
        ("POST", "/v1/models/mlp:predict", {}, 400, "Missing 'inputs' or 'instances' key"),
        ("POST", "/v1/models/mlp:predict", {"inputs": 1, "instances": 1}, 400, "only one of"),
        (
            "POST",
            "/v1/models/mlp:predict",
            {"instances": [[1] * 64, [1] * 63]},
            400,
            "instances[1]: list of 63 values",
        ),
        (
            "POST",
            "/v1/models/mlp:predict",
            {"instances": [[[1] * 64]]},
            400,
            "has shape [1, 1, 64]",
        ),
        (
            "POST",
            "/v1/models/mlp:predict",
            {"instances": [["1"] * 64]},
            400,
            "instances[0][0]: JSON Value",
        ),
        (
            "POST",
            "/v1/models/mlp:predict",
            {"instances": [[1e39] * 64]},
            400,
            "without loss of precision",
        ),
        (
            "POST",
            "/v1/models/mlp:predict",
            b'{"instances": [[1e999]]}',
            400,
            "number 1e999 is out of a double's range",
        ),
        (
            "POST",
            "/v1/models/mlp:predict",
            {"signature_name": "n", **X_ROW},
            400,
            'signature key "n"',
        ),
        ("POST", "/v1/models/mlp:predict", {"signature_name": 1, **X_ROW}, 400, "must be a string"),
        (
            "POST",
            "/v1/models/mlp:predict",
            {"inputs": {"y": [[1] * 64]}},
            400,
            "Missing named input: x",
        ),
        (
            "POST",
            "/v1/models/add_two:predict",
            {"instances": [[1, 2, 3]]},
            400,
            "instances is a plain list",
        ),
        (
            "POST",
            "/v1/models/add_two:predict",
            {"inputs": {"a": [[1, 2, 3]], "b": [[1, 2]]}},
            400,
            "input 'b' has shape [1, 2]",
        ),
        (
            "POST",
            "/v1/models/strings:predict",
            {"inputs": [{"b64": b64(b"\xff")}]},
            400,
            "not valid UTF-8",
        ),
    ],
)
def test_errors(method: str, path: str, body: Any, status: int, message: str, stack: Stack) -> None:
    reply = http(method, f"{stack.rest}{path}", body)
    assert reply.status == status, reply.body
    assert message in reply.error()
    assert "Retry-After" not in reply.headers
    assert "Access-Control-Allow-Origin" not in reply.headers


def test_limits_of_tensor_elements(stack: Stack) -> None:
    url = f"{stack.alt}/v1/models/mlp:predict"
    reply = post(url, {"inputs": [[1] * 64] * 2})
    assert reply.status == 400
    assert (
        "inputs: tensor with shape [2, 64] has 128 elements, over the limit of 100" in reply.error()
    )
    assert post(url, {"inputs": [[1] * 64]}).status == 200


def test_predict_deadline_when_the_worker_does_not_answer(stack: Stack) -> None:
    (pid,) = stack.pool.pids()
    os.kill(pid, signal.SIGSTOP)
    try:
        reply = post(f"{stack.alt}/v1/models/scaled:predict", {"instances": [[1, 2]]})
    finally:
        os.kill(pid, signal.SIGCONT)
    assert reply.status == 504
    assert reply.error().startswith("Deadline exceeded")
    assert post(f"{stack.rest}/v1/models/scaled:predict", {"instances": [[1, 2]]}).status == 200


def test_classify_and_regress_go_to_the_hook(stack: Stack) -> None:
    body = {"signature_name": "s", "examples": [{"f": [1.5]}]}
    reply = post(f"{stack.alt}/v1/models/mlp/labels/stable:regress", body)
    assert reply.status == 200
    assert reply.json() == {
        "results": [[["label", 0.5]]],
        "echo": {"method": "regress", "model": "mlp", "version": None, "label": "stable"},
        "body": body,
    }
    reply = post(f"{stack.alt}/v1/models/mlp/versions/2:classify", {"examples": []})
    assert reply.json()["echo"] == {
        "method": "classify",
        "model": "mlp",
        "version": 2,
        "label": None,
    }


# -- the grammar, applied once per request ---------------------------------------------------------
def test_a_request_line_is_parsed_once_into_its_call_and_refusals_are_kept() -> None:
    api = TfServingRest(None, max_elements=1)  # type: ignore[arg-type]  # parse reads no core
    call = api.parse("POST", "/v1/models/m/versions/2:predict")
    assert (call.protocol, call.api, call.model, call.version) == (PROTOCOL, "Predict", "m", 2)
    assert call.route == "/v1/models/{model_name}/versions/{version}:predict"
    assert call.refusal is None and call.detail is not None and call.detail.verb == "predict"
    status = api.parse("GET", "/v1/models/m/labels/stable")
    assert (status.api, status.version, status.route) == (
        "GetModelStatus",
        None,
        "/v1/models/{model_name}/labels/{label}",
    )
    assert api.parse("GET", "/v1/models/m/metadata").api == "GetModelMetadata"
    bad = api.parse("POST", "/v1/models/m:nope")
    assert (bad.api, bad.model, bad.route, bad.detail) == (UNKNOWN_API, "", "", None)
    assert isinstance(bad.refusal, InvalidArgument)
    assert bad.refusal.message == "Malformed request: POST /v1/models/m:nope"
    wrong_method = api.parse("DELETE", "/v1/models/m:predict")
    assert isinstance(wrong_method.refusal, HttpError)
    assert (wrong_method.refusal.status, wrong_method.refusal.headers) == (405, {"Allow": "POST"})
    assert api.owns("/V1/models/m") and not api.owns("/v2/models/m")
