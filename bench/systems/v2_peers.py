"""The peers that speak KServe's v2 inference protocol: MLServer, Triton and KServe.

- ``mlserver``: Seldon MLServer 1.7.1 with :mod:`bench.systems.peers.mlserver_runtime`, gRPC
  ModelInfer, parallel workers and adaptive batching as configured;
- ``triton``: a real Triton Inference Server 2.51 through PyTriton
  (:mod:`bench.systems.peers.triton_server`): ``instances`` ONNX Runtime sessions of one intra-op
  thread each behind Triton's dynamic batcher (``max_queue_delay_microseconds=0``), driven over
  gRPC v2 ModelInfer or its HTTP v2 ``/infer`` with the binary-tensor extension (what
  ``tritonclient`` sends by default);
- ``kserve``: KServe 0.21's Python ``ModelServer`` (:mod:`bench.systems.peers.kserve_server`),
  over gRPC v2 ModelInfer or v1 REST ``:predict`` with JSON ``instances``.

Each runs in its own virtualenv (:mod:`bench.systems.venvs`); its request is built once by its own
client library there (:mod:`bench.systems.peers.v2_request`). gRPC requests carry the tensor in
``raw_input_contents``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.systems import venvs
from bench.systems.listening import http_status
from bench.systems.models import INPUT_NAMES, input_shape, sample_input
from bench.systems.procs import StartFailed, start_polled, start_with_ready_fd
from bench.systems.targets import Context, Running, SystemSpec, Target

PEERS = Path(__file__).resolve().parent / "peers"
V2_METHOD = "/inference.GRPCInferenceService/ModelInfer"
TRITON_MAX_BATCH_SIZE = 32
"""Triton's ``max_batch_size`` for every model (tensorgate's batching configs use 32 too)."""


def _venv_python(name: str) -> Path:
    python, reason = venvs.ensure(name)
    if python is None:
        raise StartFailed(reason)
    return python


def v2_request(ctx: Context, proto: str, model: str) -> bytes:
    """A serialized ModelInferRequest (or, for ``triton-http``, an HTTP ``/infer`` body) for
    ``model``'s sample input, built in the peer's venv by its own client library."""

    def build() -> bytes:
        venv = proto.split("-")[0]
        dims = [str(d) for d in input_shape(model, ctx.batch)]
        script = str(PEERS / "v2_request.py")
        out = subprocess.run(
            [str(_venv_python(venv)), script, proto, model, INPUT_NAMES[model], *dims],
            input=ctx.raw_input(model),
            capture_output=True,
            timeout=120,
        )
        if out.returncode != 0:
            raise StartFailed(f"building the {proto} request failed", out.stderr.decode()[-2000:])
        return out.stdout

    return ctx.payload(("v2", proto, model), build)


def mlserver(ctx: Context, spec: SystemSpec, model: str, cpus: tuple[int, ...]) -> Running:
    python = _venv_python("mlserver")
    payload = v2_request(ctx, "mlserver", model)  # before the server starts: it may fail
    p = spec.params
    root = ctx.logs / f"{spec.name}-{model}-repo"
    (root / model).mkdir(parents=True, exist_ok=True)
    settings = {
        "debug": False,
        "host": "127.0.0.1",
        "http_port": 0,
        "grpc_port": 0,
        "metrics_port": 0,
        "parallel_workers": p.get("parallel_workers", 0),
    }
    model_settings: dict[str, Any] = {
        "name": model,
        "implementation": "mlserver_runtime.OnnxRuntimeModel",
        "parameters": {
            "uri": str(ctx.model_file(model)),
            "extra": {"intra_op_threads": p.get("intra_op", 1)},
        },
    }
    if p.get("max_batch_size", 0) > 1:
        model_settings["max_batch_size"] = p["max_batch_size"]
        model_settings["max_batch_time"] = p.get("max_batch_time", 0.001)
    (root / "settings.json").write_text(json.dumps(settings))
    (root / model / "model-settings.json").write_text(json.dumps(model_settings))
    env = {**os.environ, "PYTHONPATH": str(PEERS)}
    argv = [str(python.parent / "mlserver"), "start", str(root)]
    server, ports = start_polled(
        spec.name,
        argv,
        ctx.log_path(spec, model),
        f"/v2/models/{model}/ready",
        listens=3,
        cpus=cpus,
        env=env,
        cwd=root,
    )
    # The metrics server answers HTTP/1.1 as the REST one does; the gRPC server does not.
    (grpc_port,) = (port for port in ports if http_status(port, "/") is None)
    return Running(spec, server, Target("grpc", f"127.0.0.1:{grpc_port}", V2_METHOD, payload))


def _free_port() -> int:
    """An unused local TCP port, for Triton only: PyTriton waits for the server through its own
    client on the configured ports, so port 0 would leave it waiting on port 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def triton(ctx: Context, spec: SystemSpec, model: str, cpus: tuple[int, ...]) -> Running:
    python = _venv_python("triton")
    p = spec.params
    payload = v2_request(ctx, "triton-http" if p.get("http") else "triton", model)
    # PyTriton's workspace holds Unix sockets: its path must stay short (108 bytes at most).
    scratch = Path(tempfile.mkdtemp(prefix="bench-triton-"))
    argv = [
        str(python), str(PEERS / "triton_server.py"),
        "--model", str(ctx.model_file(model)),
        "--name", model,
        "--instances", str(p.get("instances", 1)),
        "--max-batch-size", str(TRITON_MAX_BATCH_SIZE),
        "--grpc-port", str(_free_port()),
        "--http-port", str(_free_port()),
        "--metrics-port", str(_free_port()),
        "--workspace", str(scratch / "workspace"),
    ]  # fmt: skip
    try:
        server, info = start_with_ready_fd(spec.name, argv, ctx.log_path(spec, model), cpus=cpus)
    except StartFailed:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    server.remove_after = (scratch,)
    if not p.get("http"):
        target = Target("grpc", f"127.0.0.1:{server.port}", V2_METHOD, payload)
        return Running(spec, server, target)
    # The binary-tensor extension: a JSON header, then the raw tensor bytes.
    json_size = len(payload) - len(ctx.raw_input(model))
    target = Target(
        "http",
        f"http://127.0.0.1:{info['http_port']}",
        f"/v2/models/{model}/infer",
        payload,
        headers=(("inference-header-content-length", str(json_size)),),
    )
    return Running(spec, server, target)


def kserve(ctx: Context, spec: SystemSpec, model: str, cpus: tuple[int, ...]) -> Running:
    python = _venv_python("kserve")
    rest = bool(spec.params.get("rest"))
    if rest:
        payload = json.dumps({"instances": sample_input(model, ctx.batch).tolist()}).encode()
    else:
        payload = v2_request(ctx, "kserve", model)  # before the server starts: it may fail
    argv = [
        str(python), str(PEERS / "kserve_server.py"),
        "--onnx_path", str(ctx.model_file(model)),
        "--model_name", model,
        "--http_port", "0",
        "--grpc_port", "0",
    ]  # fmt: skip
    server, ports = start_polled(
        spec.name, argv, ctx.log_path(spec, model), f"/v1/models/{model}", listens=2, cpus=cpus
    )
    if rest:
        url = f"http://127.0.0.1:{server.port}"
        target = Target("http", url, f"/v1/models/{model}:predict", payload, "application/json")
    else:
        (server.port,) = ports - {server.port}  # the gRPC server's
        target = Target("grpc", f"127.0.0.1:{server.port}", V2_METHOD, payload)
    return Running(spec, server, target)
