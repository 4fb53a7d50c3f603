"""Every error path of the Open Inference Protocol through a real gateway: the official
``tritonclient`` (its own process) where it can send the mistake, raw HTTP bodies and raw
``ModelInferRequest`` messages where only a hand-made request can. Each answer has the spec's
code — gRPC's canonical code, HTTP Triton's status — and a message naming what is wrong; bad
input is never INTERNAL."""

from __future__ import annotations

import json
import struct
from typing import Any

import grpc
import numpy as np
import pytest

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway._pb.inference import grpc_service_pb2_grpc as pb_grpc
from tests.support.rest import Reply, http
from tests.support.triton_gateway import (
    Calls,
    V2Gateway,
    v2_gateway,  # noqa: F401 (the session fixture)
)

X = np.ones((1, 64), np.float32)
INVALID = ("StatusCode.INVALID_ARGUMENT", "400")
NOT_FOUND = ("StatusCode.NOT_FOUND", "404")
UNIMPLEMENTED = ("StatusCode.UNIMPLEMENTED", "501")
CASES: dict[str, tuple[tuple[str, str], str, dict[str, Any]]] = {
    # id: ((gRPC status, HTTP status), message fragment, infer arguments)
    "unknown_model": (
        NOT_FOUND,
        "Request for unknown model: 'nope' is not found",
        {"model": "nope"},
    ),
    "unknown_version": (
        NOT_FOUND,
        "Request for unknown model: 'mlp' version 7 is not found",
        {"version": "7"},
    ),
    "unknown_label": (INVALID, "Unrecognized servable version label: beta", {"version": "beta"}),
    "wrong_datatype": (
        INVALID,
        "input 'x' has datatype FP64 but the model expects FP32",
        {"inputs": {"x": ("FP64", X.astype(np.float64))}},
    ),
    "wrong_shape": (
        INVALID,
        "input 'x' has shape [1, 63] but the signature expects [-1, 64]",
        {"inputs": {"x": ("FP32", np.ones((1, 63), np.float32))}},
    ),
    "wrong_name": (
        INVALID,
        "Sent extra: {y}. Missing but required: {x}.",
        {"inputs": {"y": ("FP32", X)}},
    ),
    "unknown_output": (
        INVALID,
        "output tensor alias not found in signature: nope",
        {"outputs": [{"name": "nope"}]},
    ),
    "unknown_signature": (
        ("StatusCode.FAILED_PRECONDITION", "400"),
        'Serving signature key "nope" not found.',
        {"parameters": {"signature_name": "nope"}},
    ),
    "sequence": (INVALID, "sequence batching is not supported", {"kwargs": {"sequence_id": 3}}),
    "classification": (
        UNIMPLEMENTED,
        "the classification extension is not supported",
        {"outputs": [{"name": "probs", "class_count": 3}]},
    ),
}
OPS = {  # id: (op, gRPC status, HTTP status, message fragment)
    "shm_status": ("system_shm_status", UNIMPLEMENTED, "system shared-memory extension is not"),
    "shm_register": ("system_shm_register", UNIMPLEMENTED, "system shared-memory extension is not"),
    "cuda_status": ("cuda_shm_status", UNIMPLEMENTED, "CUDA shared-memory extension is not"),
    "metadata_unknown": ("model_metadata", NOT_FOUND, "Request for unknown model: 'nope'"),
    "statistics_unknown": ("statistics", NOT_FOUND, "Request for unknown model: 'nope'"),
}


def _plan() -> Calls:
    plan = Calls()
    for case, (_, _, arguments) in CASES.items():
        arguments = dict(arguments)
        model = arguments.pop("model", "mlp")
        inputs = arguments.pop("inputs", {"x": ("FP32", X)})
        for client in ("grpc", "http"):
            plan.infer(f"{case}.{client}", client, model, inputs, **arguments)
    for case, (op, _, _) in OPS.items():
        for client in ("grpc", "http"):
            plan.op(f"{case}.{client}", client, op, model="nope")
    plan.op("model_config.grpc", "grpc", "model_config", model="mlp")
    plan.op("model_config.http", "http", "model_config", model="mlp")
    return plan


@pytest.fixture(scope="module")
def errors(
    v2_gateway: V2Gateway,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    results, _ = _plan().run(v2_gateway.process, tmp_path_factory.mktemp("v2_errors"))
    return results


@pytest.mark.parametrize("client", ["grpc", "http"])
@pytest.mark.parametrize("case", list(CASES))
def test_tritonclient_gets_the_spec_s_error(errors: dict[str, Any], case: str, client: str) -> None:
    (grpc_status, http_status), message, _ = CASES[case]
    result = errors[f"{case}.{client}"]
    assert not result["ok"], result
    assert result["status"] == (grpc_status if client == "grpc" else http_status)
    assert message in result["message"]


@pytest.mark.parametrize("client", ["grpc", "http"])
@pytest.mark.parametrize("case", list(OPS))
def test_extensions_tensorgate_lacks_and_unknown_models(
    errors: dict[str, Any], case: str, client: str
) -> None:
    _, (grpc_status, http_status), message = OPS[case]
    result = errors[f"{case}.{client}"]
    assert not result["ok"], result
    assert result["status"] == (grpc_status if client == "grpc" else http_status)
    assert message in result["message"]


def test_model_configuration_is_not_served(errors: dict[str, Any]) -> None:
    """ModelConfig is not in tensorgate's service: grpc's own UNIMPLEMENTED; REST says why."""
    assert errors["model_config.grpc"]["status"] == "StatusCode.UNIMPLEMENTED"
    http_answer = errors["model_config.http"]
    assert http_answer["status"] == "501"
    assert "model configuration extension is not supported" in http_answer["message"]


# -- hand-made REST bodies ----------------------------------------------------------------------
def _infer(gateway: V2Gateway, body: bytes, **headers: str) -> Reply:
    url = f"http://127.0.0.1:{gateway.process.rest_port}/v2/models/mlp/infer"
    return http("POST", url, body, headers)


def _tensor(**fields: Any) -> dict[str, Any]:
    return {"name": "x", "datatype": "FP32", "shape": [1, 64], **fields}


def _json(*inputs: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps({"inputs": list(inputs), **extra}).encode()


ROW = struct.pack("<64f", *range(64))
BINARY_X = _tensor(parameters={"binary_data_size": 256})
REST_CASES: dict[str, tuple[bytes, bytes, dict[str, str], str]] = {
    # id: (JSON, binary data after it, headers, message fragment)
    "not_json": (b'{"inputs": [', b"", {}, "the inference request is not valid JSON"),
    "not_an_object": (b"[1, 2]", b"", {}, "the inference request must be a JSON object"),
    "no_inputs": (b"{}", b"", {}, "the inference request has no 'inputs'"),
    "no_data": (_json(_tensor()), b"", {}, "exactly one of 'data' and 'binary_data_size'"),
    "unknown_datatype": (
        _json(_tensor(datatype="FP99", data=[0] * 64)),
        b"",
        {},
        "invalid datatype 'FP99'",
    ),
    "too_few_values": (_json(_tensor(data=[1, 2, 3])), b"", {}, "expected 64 values for shape"),
    "not_numbers": (_json(_tensor(data=["a"] * 64)), b"", {}, "is not a number"),
    "too_big": (_json(_tensor(shape=[1, 10**13], data=[])), b"", {}, "over the limit of"),
    "bad_header": (
        _json(_tensor(data=[0] * 64)),
        b"",
        {"Inference-Header-Content-Length": "x"},
        "Unable to parse Inference-Header-Content-Length, got: x",
    ),
    "header_past_body": (
        _json(_tensor(data=[0] * 64)),
        b"",
        {"Inference-Header-Content-Length": "100000"},
        "inference header size should be in range",
    ),
    "binary_short": (
        _json(BINARY_X),
        ROW[:100],
        {},
        "unexpected size for input 'x', expecting 256 bytes of binary data",
    ),
    "binary_left_over": (
        _json(BINARY_X),
        ROW + b"!",
        {},
        "unexpected additional input data for model 'mlp'",
    ),
    "binary_of_another_shape": (
        _json(_tensor(shape=[1, 32], parameters={"binary_data_size": 256})),
        ROW,
        {},
        "has shape [1, 32] but the signature expects [-1, 64]",
    ),
    "bad_timeout": (
        _json(_tensor(data=[0] * 64), parameters={"timeout": -5}),
        b"",
        {},
        "invalid value for 'timeout'",
    ),
}


@pytest.mark.parametrize("case", list(REST_CASES))
def test_bad_rest_bodies_are_400(v2_gateway: V2Gateway, case: str) -> None:  # noqa: F811
    header, binary, headers, message = REST_CASES[case]
    if binary:
        headers = {"Inference-Header-Content-Length": str(len(header)), **headers}
    reply = _infer(v2_gateway, header + binary, **headers)
    assert reply.status == 400, reply.body
    assert message in reply.error()


def test_raw_binary_request_and_wrong_paths(v2_gateway: V2Gateway) -> None:  # noqa: F811
    """``Inference-Header-Content-Length: 0``: the body is the one input's bytes, every output
    comes back binary; a path of the grammar with the other method is 405, outside it 404."""
    reply = _infer(v2_gateway, ROW, **{"Inference-Header-Content-Length": "0"})
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/octet-stream"
    length = int(reply.headers["Inference-Header-Content-Length"])
    header = json.loads(reply.body[:length])
    assert [o["parameters"]["binary_data_size"] for o in header["outputs"]] == [40, 40]
    assert len(reply.body) == length + 80
    base = f"http://127.0.0.1:{v2_gateway.process.rest_port}"
    wrong_method = http("GET", f"{base}/v2/models/mlp/infer")
    assert wrong_method.status == 405 and wrong_method.headers["Allow"] == "POST"
    assert "answers POST, not GET" in wrong_method.error()
    unknown = http("GET", f"{base}/v2/nope")
    assert unknown.status == 404 and "Not found" in unknown.error()


# -- hand-made gRPC messages --------------------------------------------------------------------
def _request(**fields: Any) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="mlp")
    request.inputs.add(name="x", datatype="FP32", shape=[1, 2])
    for name, value in fields.items():
        if name == "raw":
            request.raw_input_contents.extend(value)
        else:
            getattr(request.inputs[0].contents, name).extend(value)
    return request


GRPC_CASES = {
    "raw_of_the_wrong_shape": (
        _request(raw=[bytes(7)]),
        "input 'x' has shape [1, 2] but the signature expects [-1, 64]",
    ),
    "raw_and_typed": (
        _request(raw=[bytes(8)], fp32_contents=[1.0, 2.0]),
        "contents field must not be specified when using raw_input_contents for 'x'",
    ),
    "two_raw_entries": (_request(raw=[bytes(8), bytes(8)]), "raw_input_contents has 2 entries"),
    "no_data": (_request(), "unable to find data for input tensor 'x' for model 'mlp'"),
}


@pytest.mark.parametrize("case", list(GRPC_CASES))
def test_bad_infer_messages_are_invalid_argument(
    v2_gateway: V2Gateway,  # noqa: F811
    case: str,
) -> None:
    request, message = GRPC_CASES[case]
    if case == "no_data":  # reach the value check: a shape the signature takes
        request.inputs[0].shape[:] = [1, 64]
    with grpc.insecure_channel(v2_gateway.process.target) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.ModelInfer(request, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (info.value.details() or "")


def test_a_byte_size_that_does_not_fit_the_shape(v2_gateway: V2Gateway) -> None:  # noqa: F811
    request = pb.ModelInferRequest(model_name="mlp")
    request.inputs.add(name="x", datatype="FP32", shape=[1, 64])
    request.raw_input_contents.append(bytes(255))
    with grpc.insecure_channel(v2_gateway.process.target) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.ModelInfer(request, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "expected 256 bytes of FP32 data for shape [1, 64], got 255" in str(info.value.details())


# -- hostile input: 400 / INVALID_ARGUMENT, never 500 / INTERNAL ------------------------------
def _deep(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


_X = '{"name": "x", "datatype": "FP32", "shape": [1, 64], "data": %s}'
_ZEROS = "[" + ", ".join(["0"] * 64) + "]"
_LONG_VERSION = "9" * 5000


def _with_parameters(parameters: str) -> bytes:
    return ('{"inputs": [%s], "parameters": {%s}}' % (_X % _ZEROS, parameters)).encode()  # noqa: UP031


HOSTILE_REST: dict[str, tuple[str, str, bytes, dict[str, str], str]] = {
    # id: (method, path after /v2/models/mlp, body, headers, message fragment)
    "empty_body": ("POST", "/infer", b"", {}, "the inference request is empty"),
    "empty_json_body": (
        "POST",
        "/infer",
        b"",
        {"Content-Type": "application/json"},
        "the inference request is empty",
    ),
    "empty_raw_body": (
        "POST",
        "/infer",
        b"",
        {"Inference-Header-Content-Length": "0"},
        "input byte size mismatch for input 'x'",
    ),
    "data_nested_1100_deep": (
        "POST",
        "/infer",
        ('{"inputs": [%s]}' % (_X % _deep(1100))).encode(),
        {},
        "nested too deeply",
    ),
    "parameters_nested_1100_deep": (
        "POST",
        "/infer",
        _with_parameters('"p": ' + _deep(1100)),
        {},
        "nested too deeply",
    ),
    "401_digit_fp32": (
        "POST",
        "/infer",
        ('{"inputs": [%s]}' % (_X % ("[" + "9" * 401 + ", 0" * 63 + "]"))).encode(),
        {},
        "is out of range for FP32",
    ),
    "401_digit_timeout": (
        "POST",
        "/infer",
        _with_parameters('"timeout": ' + "9" * 401),
        {},
        "invalid value for 'timeout'",
    ),
    "lone_surrogate_id": (
        "POST",
        "/infer",
        ('{"id": "\\udc80", "inputs": [%s]}' % (_X % _ZEROS)).encode(),
        {},
        "'id' must be valid Unicode",
    ),
    "long_version_infer": (
        "POST",
        f"/versions/{_LONG_VERSION}/infer",
        ('{"inputs": [%s]}' % (_X % _ZEROS)).encode(),
        {},
        "is out of range",
    ),
    "long_version_ready": ("GET", f"/versions/{_LONG_VERSION}/ready", b"", {}, ""),
    "long_version_stats": ("GET", f"/versions/{_LONG_VERSION}/stats", b"", {}, "is out of range"),
}


@pytest.mark.parametrize("case", list(HOSTILE_REST))
def test_hostile_rest_input_is_400(v2_gateway: V2Gateway, case: str) -> None:  # noqa: F811
    method, suffix, body, headers, message = HOSTILE_REST[case]
    url = f"http://127.0.0.1:{v2_gateway.process.rest_port}/v2/models/mlp{suffix}"
    reply = http(method, url, body or None, headers)
    assert reply.status == 400, reply.body[:300]
    if message:
        assert message in reply.error()


def test_a_long_grpc_version_is_invalid_argument(v2_gateway: V2Gateway) -> None:  # noqa: F811
    request = pb.ModelInferRequest(model_name="mlp", model_version=_LONG_VERSION)
    request.inputs.add(name="x", datatype="FP32", shape=[1, 64])
    request.raw_input_contents.append(ROW)
    with grpc.insecure_channel(v2_gateway.process.target) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.ModelInfer(request, timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "is out of range" in str(info.value.details())
        ready = stub.ModelReady(pb.ModelReadyRequest(name="mlp", version=_LONG_VERSION), timeout=30)
        assert not ready.ready
