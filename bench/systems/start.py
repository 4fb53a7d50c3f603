"""The systems under test, each started on demand and addressed the same way.

- ``tensorgate``: ``python -m gateway`` (TF Serving flags, ``--ready_fd`` handshake), gRPC Predict,
  gRPC v2 ModelInfer (``v2``: the V2 peers' request) or its TF Serving REST API (JSON
  ``instances``), batching on or off, its default front ends (``--frontends=0``: one per server
  CPU) or as many as the configuration names; with ``metrics`` its Prometheus page is on (a
  monitoring config and a REST port) and :attr:`Running.metrics_url` names it; with
  ``request_log`` (a sampling rate) the model is served from a config file whose
  ``logging_config`` logs its calls at that rate into the run's log folder;
- ``echo``: the bare grpc.aio echo server (:mod:`bench.systems.peers.echo_server`), same method
  and bytes;
- both run on this interpreter unless their parameters name another ``python`` (and ``env``
  additions): ``python -m bench grpcio`` runs them on other grpcio releases that way;
- ``fastapi-<inline|thread|process>``: :mod:`bench.systems.peers.fastapi_app` under uvicorn
  (uvloop, httptools), HTTP/1.1 with a raw float32 body;
- ``mlserver``, ``triton``, ``kserve``: the KServe v2 peers, :mod:`bench.systems.v2_peers`.

Everything binds 127.0.0.1 only. A server is pinned to ``cpus`` (all its processes) when given.
"""

from __future__ import annotations

import json
import os
import sys

from bench.load.calls import PREDICT_METHOD, predict_payload, v2_infer_payload
from bench.systems import v2_peers, venvs
from bench.systems.models import INPUT_NAMES, input_shape, sample_input
from bench.systems.procs import StartFailed, start_polled, start_with_ready_fd
from bench.systems.targets import Context, Running, SystemSpec, Target

PEERS = v2_peers.PEERS
METRICS_PATH = "/monitoring/prometheus/metrics"
"""tensorgate's Prometheus page (TF Serving's default path) when a system has ``metrics`` on."""


def start(ctx: Context, spec: SystemSpec, model: str, cpus: tuple[int, ...]) -> Running:
    """Start ``spec`` serving ``model``; raises StartFailed (log attached) if it cannot."""
    starters = {
        "tensorgate": _tensorgate,
        "echo": _echo,
        "fastapi": _fastapi,
        "mlserver": v2_peers.mlserver,
        "triton": v2_peers.triton,
        "kserve": v2_peers.kserve,
    }
    return starters[spec.kind](ctx, spec, model, cpus)


def _predict_payload(ctx: Context, model: str) -> bytes:
    return ctx.payload(
        ("predict", model),
        lambda: predict_payload(model, {INPUT_NAMES[model]: sample_input(model, ctx.batch)}),
    )


def _tensorgate(ctx: Context, spec: SystemSpec, model: str, cpus: tuple[int, ...]) -> Running:
    p = spec.params
    argv = [
        p.get("python", sys.executable),
        "-m",
        "gateway",
        f"--model_name={model}",
        f"--model_base_path={ctx.model_dir(model)}",
        "--port=0",
        f"--workers={p.get('workers', 0)}",
        f"--tensorflow_intra_op_parallelism={p.get('intra_op', 1)}",
        f"--frontends={p.get('frontends', 0)}",
        *p.get("flags", ()),
    ]
    if p.get("request_log") is not None:
        argv[3:5] = [f"--model_config_file={_logged_config(ctx, spec, model, p['request_log'])}"]
    if p.get("batching"):
        path = ctx.logs / f"{spec.name}-batching.pbtxt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(p["batching"])
        argv += ["--enable_batching", f"--batching_parameters_file={path}"]
    if p.get("rest") or p.get("metrics"):
        argv.append("--rest_api_port=-1")  # the OS chooses; reported as rest_port
    if p.get("metrics"):
        path = ctx.logs / f"{spec.name}-monitoring.pbtxt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'prometheus_config {{ enable: true path: "{METRICS_PATH}" }}\n')
        argv.append(f"--monitoring_config_file={path}")
    env = {**os.environ, **p.get("env", {})}
    server, info = start_with_ready_fd(
        spec.name, argv, ctx.log_path(spec, model), cpus=cpus, env=env
    )
    metrics = f"http://127.0.0.1:{info['rest_port']}{METRICS_PATH}" if p.get("metrics") else None
    if p.get("rest"):
        # TF Serving's REST predict, row format; JSON as every REST client sends it.
        body = json.dumps({"instances": sample_input(model, ctx.batch).tolist()}).encode()
        url = f"http://127.0.0.1:{info['rest_port']}"
        return Running(
            spec,
            server,
            Target("http", url, f"/v1/models/{model}:predict", body, "application/json"),
            metrics,
        )
    if p.get("v2"):
        # The V2 peers' request: gRPC ModelInfer, the tensor in raw_input_contents.
        payload = ctx.payload(
            ("v2", "tensorgate", model),
            lambda: v2_infer_payload(
                model, INPUT_NAMES[model], input_shape(model, ctx.batch), ctx.raw_input(model)
            ),
        )
        target = Target("grpc", f"127.0.0.1:{server.port}", v2_peers.V2_METHOD, payload)
        return Running(spec, server, target, metrics)
    target = Target(
        "grpc", f"127.0.0.1:{server.port}", PREDICT_METHOD, _predict_payload(ctx, model)
    )
    return Running(spec, server, target, metrics)


def _logged_config(ctx: Context, spec: SystemSpec, model: str, rate: float) -> str:
    """A ModelServerConfig serving ``model`` with request logging at ``rate`` (its files under
    the run's log folder)."""
    prefix = ctx.logs / f"{spec.name}-request-log" / model
    prefix.parent.mkdir(parents=True, exist_ok=True)
    path = ctx.logs / f"{spec.name}-models.config"
    path.write_text(
        f'model_config_list {{ config {{ name: "{model}" base_path: "{ctx.model_dir(model)}" '
        f'logging_config {{ log_collector_config {{ type: "file" filename_prefix: "{prefix}" }} '
        f"sampling_config {{ sampling_rate: {rate} }} }} }} }}\n"
    )
    return str(path)


def _echo(ctx: Context, spec: SystemSpec, model: str, cpus: tuple[int, ...]) -> Running:
    p = spec.params
    python = p.get("python", sys.executable)
    argv = [python, "-m", "bench.systems.peers.echo_server", "--port=0"]
    env = {**os.environ, **p.get("env", {})}
    server, _ = start_with_ready_fd(spec.name, argv, ctx.log_path(spec, model), cpus=cpus, env=env)
    target = Target(
        "grpc", f"127.0.0.1:{server.port}", PREDICT_METHOD, _predict_payload(ctx, model)
    )
    return Running(spec, server, target)


def _fastapi(ctx: Context, spec: SystemSpec, model: str, cpus: tuple[int, ...]) -> Running:
    python, reason = venvs.ensure("fastapi")
    if python is None:
        raise StartFailed(reason)
    p = spec.params
    argv = [
        str(python), "-m", "uvicorn", "fastapi_app:app",
        "--app-dir", str(PEERS),
        "--host", "127.0.0.1",
        "--port", "0",
        "--workers", str(p.get("workers", 1)),
        "--loop", "uvloop",
        "--http", "httptools",
        "--no-access-log",
        "--log-level", "warning",
    ]  # fmt: skip
    env = {
        **os.environ,
        "BENCH_MODEL": str(ctx.model_file(model)),
        "BENCH_INTRA_OP": str(p.get("intra_op", 1)),
    }
    server, _ = start_polled(
        spec.name, argv, ctx.log_path(spec, model), "/health", cpus=cpus, env=env
    )
    url = f"http://127.0.0.1:{server.port}"
    target = Target("http", url, f"/{p['pattern']}", ctx.raw_input(model))
    return Running(spec, server, target)
