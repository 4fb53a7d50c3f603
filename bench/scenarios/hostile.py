"""Two hostile-caller scenarios of ``python -m bench fuzz``, each on a gateway of its own,
count-based (no figure here is a speed):

- **slow bodies**: one front end (``--frontends=1``) with ``--max_inflight_bytes=256 MiB``;
  :data:`SLOW_CONNECTIONS` connections each send a :data:`SLOW_BODY_BYTES` V2 binary infer body
  minus its last byte and hold it. Reported: the gateway's RSS idle and its peak (``VmHWM``)
  while they hold, and how many bodies were taken in and how many refused (429, connection
  closed). When every body was buffered whole, RSS went 83 → 725 MB.
- **batch neighbours**: a string identity ONNX model with batching on (5 ms); valid callers over
  V2 gRPC (raw BYTES) and TF Serving gRPC (``string_val``) beside one caller sending
  ``b"\\xff\\xfe"`` every :data:`HOSTILE_EVERY_S`. Reported: valid calls failed (must be 0),
  the hostile caller's answers, and the mean batch size (batches really formed).
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
from onnx import TensorProto, helper

from bench.load.calls import PREDICT_METHOD
from bench.measure.usage import status_bytes
from bench.systems.models import save_graph
from bench.systems.procs import Server, start_with_ready_fd
from bench.systems.v2_peers import V2_METHOD
from gateway._pb.inference import grpc_service_pb2 as v2_pb
from gateway._pb.tensorflow.core.framework import types_pb2
from gateway._pb.tensorflow_serving.apis import predict_pb2

MIB = 2**20
SLOW_CONNECTIONS = 16
SLOW_BODY_BYTES = 40 * 10**6
INFLIGHT_BYTES = 256 * MIB
VALID_CALLS = 600
"""Calls per valid caller in the neighbours scenario."""
HOSTILE_EVERY_S = 0.05
BATCHING = "max_batch_size { value: 64 }\nbatch_timeout_micros { value: 5000 }\n"


def _gateway(root: Path, name: str, model: Path, flags: list[str]) -> tuple[Server, int]:
    """A one-process gateway serving ``model``; with its REST port."""
    argv = [sys.executable, "-m", "gateway", f"--model_name={name}",
            f"--model_base_path={model}", "--port=0", "--workers=1", "--frontends=1",
            "--rest_api_port=-1", *flags]  # fmt: skip
    server, info = start_with_ready_fd(name, argv, root / f"{name}.log")
    return server, int(str(info["rest_port"]))


def slow_bodies(root: Path, mlp: Path) -> dict[str, Any]:
    """The slow-bodies scenario (module docstring) against the bench MLP at ``mlp``."""
    server, rest_port = _gateway(root, "mlp", mlp, [f"--max_inflight_bytes={INFLIGHT_BYTES}"])
    outcomes: Counter[str] = Counter()
    sockets: list[socket.socket] = []
    try:
        idle_mb = status_bytes(server.pid, "VmRSS") / MIB
        header = (
            b'{"inputs":[{"name":"x","datatype":"FP32","shape":[%d,64],' % (SLOW_BODY_BYTES // 256)
            + b'"parameters":{"binary_data_size":%d}}]}' % SLOW_BODY_BYTES
        )
        head = (
            f"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
            f"Inference-Header-Content-Length: {len(header)}\r\n"
            f"Content-Length: {len(header) + SLOW_BODY_BYTES}\r\n\r\n"
        ).encode()
        chunk = bytes(MIB)
        for _ in range(SLOW_CONNECTIONS):
            sock = socket.create_connection(("127.0.0.1", rest_port), timeout=30)
            sockets.append(sock)
            try:
                sock.sendall(head + header)
                left = SLOW_BODY_BYTES - 1
                while left:
                    left -= sock.send(chunk[: min(left, len(chunk))])
                outcomes["held (all but its last byte sent)"] += 1
            except OSError:
                outcomes[f"refused: {_answer(sock)}"] += 1
        peak_mb = status_bytes(server.pid, "VmHWM") / MIB
        held_mb = status_bytes(server.pid, "VmRSS") / MIB
    finally:
        for sock in sockets:
            sock.close()
        server.stop()
    return {
        "connections": SLOW_CONNECTIONS,
        "body_bytes": SLOW_BODY_BYTES,
        "max_inflight_bytes": INFLIGHT_BYTES,
        "outcomes": dict(outcomes),
        "rss_idle_mb": round(idle_mb, 1),
        "rss_while_held_mb": round(held_mb, 1),
        "rss_peak_mb": round(peak_mb, 1),
    }


def _answer(sock: socket.socket) -> str:
    """The status of what the server answered on ``sock`` before closing it, else "closed"."""
    try:
        sock.settimeout(5)
        answer = sock.recv(64)
    except OSError:
        return "closed"
    parts = answer.split(b" ")
    return parts[1].decode(errors="replace") if len(parts) > 1 else "closed"


def string_model(path: Path) -> Path:
    """``x`` string [-1, 1] → ``y`` = x (ONNX Identity): strings travel to ONNX Runtime as text."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "strings",
        [helper.make_tensor_value_info("x", TensorProto.STRING, ["n", 1])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, ["n", 1])],
    )
    return save_graph(graph, path)


def _v2(value: bytes) -> bytes:
    request = v2_pb.ModelInferRequest(model_name="strings")
    request.inputs.add(name="x", datatype="BYTES", shape=[1, 1])
    request.raw_input_contents.append(struct.pack("<I", len(value)) + value)
    return request.SerializeToString()


def _tf(value: bytes) -> bytes:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "strings"
    tensor = request.inputs["x"]
    tensor.dtype = types_pb2.DT_STRING
    tensor.tensor_shape.dim.add(size=1)
    tensor.tensor_shape.dim.add(size=1)
    tensor.string_val.append(value)
    return request.SerializeToString()


def neighbours(root: Path, valid_callers: int = 6) -> dict[str, Any]:
    """The batch-neighbours scenario (module docstring)."""
    model = string_model(root / "strings" / "1" / "model.onnx").parent.parent
    batching = root / "strings-batching.pbtxt"
    batching.write_text(BATCHING)
    monitoring = root / "strings-monitoring.pbtxt"
    monitoring.write_text("prometheus_config { enable: true }\n")
    flags = ["--enable_batching", f"--batching_parameters_file={batching}",
             f"--monitoring_config_file={monitoring}"]  # fmt: skip
    server, rest_port = _gateway(root, "strings", model, flags)
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    done = threading.Event()
    target = f"127.0.0.1:{server.port}"

    def valid(index: int) -> None:
        method, encode = (V2_METHOD, _v2) if index % 2 == 0 else (PREDICT_METHOD, _tf)
        with grpc.insecure_channel(target) as channel:
            call = channel.unary_unary(method)
            for n in range(VALID_CALLS):
                try:
                    call(encode(f"caller {index} call {n}".encode()), timeout=30)
                    key = "valid OK"
                except grpc.RpcError as error:
                    key = f"valid {error.code().name}: {error.details()}"
                with lock:
                    counts[key] += 1

    def hostile() -> None:
        with grpc.insecure_channel(target) as channel:
            calls = [
                (channel.unary_unary(V2_METHOD), _v2),
                (channel.unary_unary(PREDICT_METHOD), _tf),
            ]
            turn = 0
            while not done.wait(HOSTILE_EVERY_S):
                call, encode = calls[turn % 2]
                turn += 1
                try:
                    call(encode(b"\xff\xfe"), timeout=30)
                    key = "hostile OK"
                except grpc.RpcError as error:
                    key = f"hostile {error.code().name}"
                with lock:
                    counts[key] += 1

    threads = [threading.Thread(target=valid, args=(i,)) for i in range(valid_callers)]
    bad = threading.Thread(target=hostile)
    try:
        bad.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.set()
        bad.join()
        page = _metrics(rest_port)
    finally:
        done.set()
        server.stop()
    failed = sum(v for k, v in counts.items() if k.startswith("valid ") and k != "valid OK")
    batches = _sample(page, "tensorgate_batch_size_count")
    return {
        "valid_calls": valid_callers * VALID_CALLS,
        "valid_failed": failed,
        "by_answer": dict(sorted(counts.items())),
        "batches": batches,
        "mean_batch_size": round(_sample(page, "tensorgate_batch_size_sum") / max(batches, 1), 2),
    }


def _metrics(rest_port: int) -> str:
    url = f"http://127.0.0.1:{rest_port}/monitoring/prometheus/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        return str(response.read().decode())


def _sample(page: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in page.splitlines()
               if line.startswith(name + "{") or line.startswith(name + " "))  # fmt: skip
