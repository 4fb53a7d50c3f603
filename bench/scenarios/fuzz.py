"""``python -m bench fuzz --minutes N``: a real gateway under randomized hostile input for minutes.

One tensorgate (the bench MLP, batching on, REST on) gets, from a few client threads at once:
structured PredictRequests with random dtypes, shapes (zeros beside huge dimensions, negative
ones), values and ``tensor_content``; mutated and random message bytes on every
PredictionService method; random JSON bodies and mutated valid ones on REST; raw HTTP junk
(methods, paths, headers, chunked framing); and the Open Inference Protocol's surface (REST JSON
and binary, gRPC raw and typed, with its known hostile cases: :mod:`bench.scenarios.fuzz_v2`).
Every answer is counted by status. The run fails when an answer is INTERNAL / UNKNOWN / DATA_LOSS
(HTTP 500) for client input, when a complete call gets no answer within 10 s (a hang: gRPC
DEADLINE_EXCEEDED at the client's timeout, a V2 REST call without an answer), when the gateway
dies, or when a good request no longer gets its answer at the end. The RSS of the gateway's
processes is sampled throughout (the peak is reported). Then two hostile-caller scenarios run on
gateways of their own (:mod:`bench.scenarios.hostile`): slow bodies against
``--max_inflight_bytes`` (RSS), and batch neighbours (0 valid calls may fail). ``make test`` runs
the same properties derandomized in process (``tests/tfserving/test_fuzz.py``).
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.measure.usage import descendants, rss_bytes
from bench.scenarios import fuzz_v2, hostile
from bench.systems.models import ensure_models, sample_input
from bench.systems.start import start
from bench.systems.targets import Context, Running, SystemSpec
from gateway._pb.tensorflow.core.framework import types_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway._pb.tensorflow_serving.apis import predict_pb2

BAD_GRPC = {"INTERNAL", "UNKNOWN", "DATA_LOSS"}
METHODS = ("Predict", "Classify", "Regress", "MultiInference", "GetModelMetadata")
HUGE = (2**31, 2**40, 2**62, 2**63 - 1)
DATA_TYPES = [v for v in types_pb2.DataType.values() if v]
BATCHING = "max_batch_size { value: 64 }\nbatch_timeout_micros { value: 500 }\n"


class Fuzzer:
    """Random requests from one seed (each thread has its own)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.good = predict_payload("mlp", {"x": sample_input("mlp", 2)})

    def shape(self) -> list[int]:
        r = self.rng
        if r.random() < 0.3:
            return [r.choice([0, 1, 3, *HUGE]) for _ in range(r.randint(1, 4))]
        if r.random() < 0.5:
            return [r.randint(0, 4), 64]
        return [r.randint(-2, 6) for _ in range(r.randint(0, 5))]

    def tensor(self) -> TensorProto:
        r = self.rng
        data_type: int = types_pb2.DT_FLOAT if r.random() < 0.5 else r.choice(DATA_TYPES)
        if r.random() < 0.05:
            data_type = r.randint(-3, 40)  # unknown or unsupported enum values
        proto = TensorProto(dtype=types_pb2.DataType.ValueType(data_type))
        for size in self.shape():
            proto.tensor_shape.dim.add(size=size)
        if r.random() < 0.3:
            proto.tensor_content = r.randbytes(r.choice([0, 4, 256, 1024, 4096]))
        if r.random() < 0.5:
            proto.float_val.extend(r.uniform(-1e6, 1e6) for _ in range(r.randint(0, 300)))
        if r.random() < 0.2:
            proto.int_val.extend(r.randint(-(2**31), 2**31 - 1) for _ in range(r.randint(0, 9)))
        if r.random() < 0.2:
            proto.string_val.extend(r.randbytes(r.randint(0, 9)) for _ in range(r.randint(0, 5)))
        if r.random() < 0.1:
            proto.half_val.extend(r.randint(-(2**31), 2**31 - 1) for _ in range(3))
        return proto

    def predict(self) -> bytes:
        r = self.rng
        request = predict_pb2.PredictRequest()
        if r.random() < 0.95:
            request.model_spec.name = "mlp" if r.random() < 0.9 else r.choice(["", "x", "../mlp"])
        if r.random() < 0.1:
            request.model_spec.signature_name = r.choice(["", "nope", "serving_default"])
        if r.random() < 0.1:
            request.model_spec.version.value = r.choice([0, 1, 2**63 - 1, -1])
        for _ in range(r.choice([1, 1, 1, 0, 2])):
            request.inputs[r.choice(["x", "x", "x", "y", ""])].CopyFrom(self.tensor())
        if r.random() < 0.1:
            request.output_filter.append(r.choice(["probs", "nope", "probs"]))
        data: bytes = request.SerializeToString()
        return data

    def mutated(self, data: bytes) -> bytes:
        return fuzz_v2.mutated(self.rng, data)

    def grpc_call(self) -> tuple[str, bytes]:
        r = self.rng
        roll = r.random()
        if roll < 0.6:
            return PREDICT_METHOD, self.predict()
        if roll < 0.85:
            return PREDICT_METHOD, self.mutated(self.good)
        method = r.choice(METHODS)
        service = "/tensorflow.serving.PredictionService/"
        return service + method, r.randbytes(r.randint(0, 200))

    def json_value(self, depth: int = 0) -> Any:
        r = self.rng
        roll = r.random()
        if depth > 4 or roll < 0.4:
            return r.choice(
                [None, True, 1, -(2**70), 1.5, float("nan"), "s", {"b64": "eA=="}, {"b64": "%"}]
            )
        if roll < 0.8:
            return [self.json_value(depth + 1) for _ in range(r.randint(0, 4))]
        return {r.choice(["x", "y", "b64", ""]): self.json_value(depth + 1) for _ in range(2)}

    def rest_body(self) -> bytes:
        r = self.rng
        good = json.dumps({"instances": sample_input("mlp", 1).tolist()}).encode()
        roll = r.random()
        if roll < 0.3:
            return self.mutated(good)
        if roll < 0.5:
            return r.randbytes(r.randint(0, 300))
        key = r.choice(["instances", "inputs", "signature_name"])
        return json.dumps({key: self.json_value()}, allow_nan=True).encode()

    def raw_http(self) -> bytes:
        r = self.rng
        method = r.choice(["GET", "POST", "PUT", "HEAD", "CONNECT", "FOO", "DELETE", "TRACE"])
        path = r.choice(["/v1/models/mlp:predict", "/v1/models/mlp", "/healthz", "/x" * 3000])
        head = f"{method} {path} HTTP/1.{r.randint(0, 1)}\r\nHost: x\r\n".encode()
        if r.random() < 0.3:
            head += b"Transfer-Encoding: chunked\r\n\r\n" + r.choice(
                [b"ffffffffffffffff\r\n", b"zz"]
            )
        elif r.random() < 0.3:
            head += b"Content-Length: " + r.choice([b"-1", b"abc", b"5"]) + b"\r\n\r\n"
        else:
            head += r.randbytes(r.randint(0, 64)) + b"\r\n\r\n"
        return head + r.randbytes(r.randint(0, 128))


def _grpc_loop(
    target: str, seed: int, until: float, counts: Counter[str], lock: threading.Lock
) -> None:
    fuzzer = Fuzzer(seed)
    with grpc.insecure_channel(target) as channel:
        calls: dict[str, Any] = {}
        while time.monotonic() < until:
            method, data = fuzzer.grpc_call()
            call = calls.setdefault(method, channel.unary_unary(method))
            try:
                call(data, timeout=fuzz_v2.TIMEOUT_S)
                key = "grpc OK"
            except grpc.RpcError as error:
                key = fuzz_v2.grpc_key("grpc", error)
            with lock:
                counts[key] += 1


def _rest_loop(
    base: str, port: int, seed: int, until: float, counts: Counter[str], lock: threading.Lock
) -> None:
    fuzzer = Fuzzer(seed)
    while time.monotonic() < until:
        if fuzzer.rng.random() < 0.2:
            key = _raw(port, fuzzer.raw_http())
        else:
            request = urllib.request.Request(f"{base}/v1/models/mlp:predict", fuzzer.rest_body())
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    key = f"rest {response.status}"
            except urllib.error.HTTPError as error:
                error.close()
                key = f"rest {error.code}"
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                key = f"rest no answer ({type(exc).__name__})"
        with lock:
            counts[key] += 1


def _v2_loop(
    target: str, port: int, seed: int, until: float, counts: Counter[str], lock: threading.Lock
) -> None:
    fuzzer = fuzz_v2.V2Fuzzer(seed)
    with grpc.insecure_channel(target) as channel:
        calls: dict[str, Any] = {}
        while time.monotonic() < until:
            if fuzzer.rng.random() < 0.5:
                key = fuzz_v2.rest_answer(port, fuzzer.rest_call())
            else:
                key = fuzz_v2.grpc_answer(channel, calls, *fuzzer.grpc_call())
            with lock:
                counts[key] += 1


def _tree_rss_mb(pid: int) -> float:
    return sum(rss_bytes(p) for p in descendants(pid)) / 2**20


def _raw(port: int, data: bytes) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(data)
            answer = sock.recv(64)
        except (ConnectionError, TimeoutError) as exc:
            return f"raw no answer ({type(exc).__name__})"
    if not answer.startswith(b"HTTP/1."):
        return "raw closed without an answer"
    return f"raw {answer.split()[1].decode(errors='replace')}"


def fuzz(minutes: float, cache: Path, threads: int = 3, seed: int = 0) -> dict[str, Any]:
    """Run the fuzz for ``minutes``; the report (``ok`` False on any finding)."""
    models = cache / "models"
    ensure_models(models, ("mlp",))
    ctx = Context(models, cache / "logs" / "fuzz")
    spec = SystemSpec(
        "tensorgate-fuzz", "tensorgate", {"workers": 1, "rest": True, "batching": BATCHING}
    )
    running: Running = start(ctx, spec, "mlp", ())
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    until = time.monotonic() + minutes * 60
    grpc_target = f"127.0.0.1:{running.server.port}"
    rest_base = running.target.address
    rest_port = int(rest_base.rsplit(":", 1)[1])
    workers = (
        [
            threading.Thread(target=_grpc_loop, args=(grpc_target, seed + i, until, counts, lock))
            for i in range(threads)
        ]
        + [
            threading.Thread(
                target=_rest_loop, args=(rest_base, rest_port, seed + 100 + i, until, counts, lock)
            )
            for i in range(threads)
        ]
        + [
            threading.Thread(
                target=_v2_loop, args=(grpc_target, rest_port, seed + 200 + i, until, counts, lock)
            )
            for i in range(threads)
        ]
    )
    try:
        rss_start_mb = peak_mb = _tree_rss_mb(running.server.pid)
        for w in workers:
            w.start()
        while any(w.is_alive() for w in workers):
            workers[0].join(5.0)
            peak_mb = max(peak_mb, _tree_rss_mb(running.server.pid))
        for w in workers:
            w.join()
        alive = running.server.process.poll() is None
        still_serves = alive and _good_answer(grpc_target)
        rss_mb = _tree_rss_mb(running.server.pid)
    finally:
        running.stop()
    log_bytes = running.server.log_path.stat().st_size
    bad = {k: v for k, v in counts.items() if k.split()[-1] in BAD_GRPC or k.endswith(" 500")}
    hangs = {k: v for k, v in counts.items() if _is_hang(k)}
    slow = hostile.slow_bodies(ctx.logs, models / "mlp")
    neighbours = hostile.neighbours(ctx.logs)
    return {
        "minutes": minutes,
        "requests": sum(counts.values()),
        "by_status": dict(sorted(counts.items())),
        "bad": bad,
        "hangs": hangs,
        "gateway_alive": alive,
        "good_request_ok_after": still_serves,
        "gateway_rss_mb_start": rss_start_mb,
        "gateway_rss_mb_peak": peak_mb,
        "gateway_rss_mb_after": rss_mb,
        "log_bytes": log_bytes,
        "slow_bodies": slow,
        "neighbours": neighbours,
        "ok": not bad and not hangs and alive and still_serves and not neighbours["valid_failed"],
    }


def _is_hang(key: str) -> bool:
    """A complete call with no answer in time (raw junk may rightly leave the server waiting)."""
    return key.endswith("(client deadline)") or key.startswith("v2rest no answer")


def _good_answer(target: str) -> bool:
    payload = predict_payload("mlp", {"x": sample_input("mlp", 1)})
    with grpc.insecure_channel(target) as channel:
        reply = channel.unary_unary(PREDICT_METHOD)(payload, timeout=30)
    outputs = predict_pb2.PredictResponse.FromString(reply).outputs
    return bool(outputs) and all(np.isfinite(list(t.float_val)).all() for t in outputs.values())


def summary_text(report: dict[str, Any]) -> str:
    lines = [
        f"fuzzed {report['requests']} requests in {report['minutes']:g} min: "
        + ("no finding" if report["ok"] else "FINDINGS"),
        *(f"  {count:8d}  {status}" for status, count in report["by_status"].items()),
        f"gateway alive: {report['gateway_alive']}, a good request answered after: "
        f"{report['good_request_ok_after']}, hangs: {sum(report['hangs'].values())}, RSS of its "
        f"processes {report['gateway_rss_mb_start']:.1f} MB at start, "
        f"{report['gateway_rss_mb_peak']:.1f} MB at most, {report['gateway_rss_mb_after']:.1f} "
        f"MB after, log {report['log_bytes']} bytes",
        f"slow bodies: {report['slow_bodies']}",
        f"batch neighbours: {report['neighbours']}",
    ]
    if report["bad"]:
        lines.append(f"bad answers: {report['bad']}")
    return "\n".join(lines) + "\n"
