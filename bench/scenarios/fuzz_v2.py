"""The Open Inference Protocol's surface under randomized hostile input (``python -m bench fuzz``).

Beside TF Serving's API (:mod:`bench.scenarios.fuzz`), each client thread here sends V2 calls to
the same gateway (the bench MLP: ``x`` FP32 [-1, 64]):

- REST JSON infer bodies: mutated valid ones, random structures under ``inputs`` /
  ``parameters`` / ``outputs``, and the known hostile cases — nesting 1,100 deep in ``data`` or in
  ``parameters``, 401-digit integers in FP32 ``data`` or in ``timeout``, an ``id`` with a lone
  surrogate, empty bodies (with and without ``Content-Type``, header ``0``), version strings of
  5,000 digits on infer / ready / stats, a duplicate requested output, ``sequence_id``, an empty
  batch, a JSON body over 1 MiB (the off-loop path);
- REST binary bodies (``Inference-Header-Content-Length``) with sizes that do and do not add up;
- gRPC ``ModelInfer``: typed ``contents`` and ``raw_input_contents`` with random datatypes,
  shapes and bytes, mutated valid messages, long versions, random bytes on every V2 method.

Each answer is counted as ``v2rest <status>`` / ``v2grpc <code>``; the caller counts 500s and
INTERNAL / UNKNOWN / DATA_LOSS as findings, and calls with no answer in time as hangs.
"""

from __future__ import annotations

import http.client
import json
import random
from typing import Any

import grpc

from gateway._pb.inference import grpc_service_pb2 as pb

SERVICE = "/inference.GRPCInferenceService/"
INFER_METHOD = SERVICE + "ModelInfer"
OTHER_METHODS = ("ModelReady", "ModelMetadata", "ModelStatistics", "ServerLive", "ServerReady")
DATATYPES = ("FP32", "FP64", "FP16", "BF16", "INT8", "INT32", "INT64", "UINT8", "UINT64", "BOOL",
             "BYTES", "FP99", "", "fp32")  # fmt: skip
LONG_VERSION = "9" * 5000
TIMEOUT_S = 10.0
"""Client timeout of one call: an answer later than this counts as a hang."""


def _deep(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def _x(data: str, shape: str = "[1, 64]") -> str:
    return '{"name": "x", "datatype": "FP32", "shape": ' + shape + ', "data": ' + data + "}"


def _doc(x: str, extra: str = "") -> bytes:
    """An infer body with the input ``x`` and ``extra`` (``, "key": value`` pairs)."""
    return ('{"inputs": [' + x + "]" + extra + "}").encode()


ZEROS = "[" + ", ".join(["0"] * 64) + "]"
VALID = _doc(_x(ZEROS))
LARGE = _doc(_x("[" + ", ".join(["0.5"] * 64 * 5000) + "]", "[5000, 64]"))
TWICE = ', "outputs": [{"name": "probabilities"}, {"name": "probabilities"}]'
HOSTILE: tuple[tuple[str, str, bytes, dict[str, str]], ...] = (
    # (method, path after /v2/models/mlp, body, headers): the known hostile cases and Triton's
    # differences
    ("POST", "/infer", b"", {}),
    ("POST", "/infer", b"", {"Content-Type": "application/json"}),
    ("POST", "/infer", b"", {"Inference-Header-Content-Length": "0"}),
    ("POST", "/infer", _doc(_x(_deep(1100))), {}),
    ("POST", "/infer", _doc(_x(ZEROS), ', "parameters": {"p": ' + _deep(1100) + "}"), {}),
    ("POST", "/infer", _doc(_x("[" + "9" * 401 + ", 0" * 63 + "]")), {}),
    ("POST", "/infer", _doc(_x(ZEROS), ', "parameters": {"timeout": ' + "9" * 401 + "}"), {}),
    ("POST", "/infer", _doc(_x(ZEROS), ', "id": "\\ud800"'), {}),
    ("POST", f"/versions/{LONG_VERSION}/infer", VALID, {}),
    ("GET", f"/versions/{LONG_VERSION}/ready", b"", {}),
    ("GET", f"/versions/{LONG_VERSION}/stats", b"", {}),
    ("POST", "/infer", _doc(_x(ZEROS), TWICE), {}),
    ("POST", "/infer", _doc(_x(ZEROS), ', "parameters": {"sequence_id": 7}'), {}),
    ("POST", "/infer", _doc(_x("[]", "[0, 64]")), {}),
    ("POST", "/infer", LARGE, {}),
)


def mutated(r: random.Random, data: bytes) -> bytes:
    """``data`` after 1 to 8 random edits: a byte overwritten (1/2), the tail cut (1/4), or 1 to
    16 random bytes inserted (1/4). Both fuzzers' mutation of valid messages and bodies."""
    buf = bytearray(data)
    for _ in range(r.randint(1, 8)):
        if not buf:
            break
        choice = r.random()
        i = r.randrange(len(buf))
        if choice < 0.5:
            buf[i] = r.randrange(256)
        elif choice < 0.75:
            del buf[i:]
        else:
            buf[i:i] = r.randbytes(r.randint(1, 16))
    return bytes(buf)


class V2Fuzzer:
    """Random V2 calls from one seed (each thread has its own)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def mutated(self, data: bytes) -> bytes:
        return mutated(self.rng, data)

    def value(self, depth: int = 0) -> Any:
        r = self.rng
        if depth > 4 or r.random() < 0.4:
            return r.choice([None, True, 0, -1, 2**70, 1.5, float("inf"), "x", "", "FP32", [64]])
        if r.random() < 0.7:
            return [self.value(depth + 1) for _ in range(r.randint(0, 4))]
        keys = ["name", "datatype", "shape", "data", "parameters", "binary_data_size", "id"]
        return {r.choice(keys): self.value(depth + 1) for _ in range(r.randint(1, 3))}

    def rest_call(self) -> tuple[str, str, bytes, dict[str, str]]:
        """(method, path after /v2/models/mlp, body, headers)."""
        r, roll = self.rng, self.rng.random()
        if roll < 0.15:
            return r.choice(HOSTILE[:-1] if r.random() < 0.95 else HOSTILE)
        if roll < 0.4:
            return "POST", "/infer", self.mutated(VALID), {}
        if roll < 0.6:
            key = r.choice(["inputs", "parameters", "outputs", "id"])
            body = {"inputs": [json.loads(_x(ZEROS))], key: self.value()}
            return "POST", "/infer", json.dumps(body, allow_nan=True).encode(), {}
        if roll < 0.8:
            return self.binary()
        if roll < 0.9:
            return "POST", "/infer", r.randbytes(r.randint(0, 300)), {}
        version = r.choice(["", "/versions/1", "/versions/0", "/versions/-1", "/versions/x"])
        return "GET", version + r.choice(["", "/ready", "/stats"]), b"", {}

    def binary(self) -> tuple[str, str, bytes, dict[str, str]]:
        r = self.rng
        size = r.choice([256, 256, 0, 255, 257, 2**31])
        datatype = r.choice(DATATYPES) if r.random() < 0.3 else "FP32"
        x = {"name": "x", "datatype": datatype, "shape": [1, 64],
             "parameters": {"binary_data_size": size}}  # fmt: skip
        document = {"inputs": [x], "parameters": {"binary_data_output": r.random() < 0.5}}
        header = json.dumps(document).encode()
        data = r.randbytes(r.choice([256, 255, 0, 300]))
        length = r.choice([len(header)] * 4 + [0, len(header) + 1, -1, 10**30])
        return "POST", "/infer", header + data, {"Inference-Header-Content-Length": str(length)}

    def grpc_call(self) -> tuple[str, bytes]:
        r, roll = self.rng, self.rng.random()
        if roll < 0.6:
            return INFER_METHOD, self.infer().SerializeToString()
        if roll < 0.85:
            valid = pb.ModelInferRequest(model_name="mlp")
            valid.inputs.add(name="x", datatype="FP32", shape=[1, 64])
            valid.raw_input_contents.append(bytes(256))
            return INFER_METHOD, self.mutated(valid.SerializeToString())
        return SERVICE + r.choice(OTHER_METHODS), r.randbytes(r.randint(0, 200))

    def infer(self) -> pb.ModelInferRequest:
        r = self.rng
        request = pb.ModelInferRequest(model_name="mlp" if r.random() < 0.9 else "nope")
        if r.random() < 0.1:
            request.model_version = r.choice(["1", "0", LONG_VERSION, "stable", "-1"])
        if r.random() < 0.1:
            request.id = r.choice(["", "x" * 10_000, "é"])
        if r.random() < 0.1:
            name = r.choice(["timeout", "sequence_id", "priority", "triton_x", "signature_name"])
            request.parameters[name].int64_param = r.choice([-1, 0, 1, 2**63 - 1])
        shape = r.choice([[1, 64], [0, 64], [2, 64], [1, 63], [2**40, 0], [-1, 64], []])
        tensor = request.inputs.add(name=r.choice(["x", "x", "y"]), shape=shape)
        tensor.datatype = r.choice(DATATYPES) if r.random() < 0.4 else "FP32"
        if r.random() < 0.5:
            request.raw_input_contents.append(r.randbytes(r.choice([0, 255, 256, 512, 4096])))
        elif r.random() < 0.5:
            tensor.contents.fp32_contents.extend(r.uniform(-1e6, 1e6) for _ in range(64))
        else:
            tensor.contents.bytes_contents.extend(r.randbytes(3) for _ in range(r.randint(0, 64)))
        if r.random() < 0.1:
            request.outputs.add(name=r.choice(["probabilities", "nope"]))
        return request


def rest_answer(port: int, call: tuple[str, str, bytes, dict[str, str]]) -> str:
    """One REST call on a fresh connection: ``v2rest <status>`` or ``v2rest no answer (...)``."""
    method, path, body, headers = call
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        connection.request(method, "/v2/models/mlp" + path, body=body or None, headers=headers)
        response = connection.getresponse()
        response.read()
        return f"v2rest {response.status}"
    except (OSError, http.client.HTTPException) as exc:
        return f"v2rest no answer ({type(exc).__name__})"
    finally:
        connection.close()


def grpc_answer(channel: grpc.Channel, calls: dict[str, Any], method: str, data: bytes) -> str:
    """One gRPC call: ``v2grpc <code>``."""
    call = calls.setdefault(method, channel.unary_unary(method))
    try:
        call(data, timeout=TIMEOUT_S)
        return "v2grpc OK"
    except grpc.RpcError as error:
        return grpc_key("v2grpc", error)


def grpc_key(prefix: str, error: grpc.RpcError) -> str:
    """``<prefix> <code>``, or ``<prefix> no answer (client deadline)`` when the client's own
    deadline ended the call (the server's DEADLINE_EXCEEDED, from a request's ``timeout``
    parameter, has the gateway's message)."""
    code = error.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and error.details() == "Deadline Exceeded":
        return f"{prefix} no answer (client deadline)"
    return f"{prefix} {code.name}"
