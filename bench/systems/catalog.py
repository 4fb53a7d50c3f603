"""Named configurations of the systems under test (see :mod:`bench.systems`), and which of them
each throughput scenario compares."""

from __future__ import annotations

from bench.systems.targets import SystemSpec

_FASTAPI_PATTERNS = ("inline", "thread", "process")

BATCHING_TIMEOUT_0 = (
    "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 0 }\n"
    "max_enqueued_batches { value: 100 }\n"
)
"""tensorgate's batching parameters when it batches like Triton does here: up to 32 rows, a batch
closes as soon as a worker is free (TF Serving's text format)."""

GUARDED_FLAGS = {
    "mlp": ("--max_concurrent_requests=64", "--max_queue_delay_ms=20"),
    "resnet50": ("--max_concurrent_requests=64", "--max_queue_delay_ms=200"),
}
"""Admission flags of the ``overload`` scenario's systems: at most 64 calls in progress (the
capacity run's concurrency), and a queue-delay target of about one batch time at capacity.
``--grpc_max_pending_requests`` is left out: below the clients' concurrency it cancels calls even
under capacity (on grpcio 1.85 a run with 16 cancelled 90 % of a 64-user closed loop; grpcio 1.78,
the pinned one, does not apply it to HTTP/2 calls)."""


REQUEST_LOG_RATE = 0.01
"""The sampling rate of the request-logging cost row (``tensorgate-batch-log``)."""
OPENVINO = {"-ov": "openvino:fp32", "-ov-bf16": "openvino:bf16"}
WORKER_RUNS_ONLY = "--inline_runs=never"
"""The flag that forces every run to the worker processes (the ``-workers`` systems)."""
"""tensorgate's OpenVINO configurations (``--model_runtimes=*=...``) by name suffix."""


def _openvino() -> list[SystemSpec]:
    """tensorgate on OpenVINO at each precision: one 1-thread worker, and two."""
    specs = []
    for suffix, runtime in OPENVINO.items():
        flags = (f"--model_runtimes=*={runtime}",)
        for name, workers in (("tensorgate", 1), ("tensorgate-2w", 2)):
            options = {"workers": workers, "intra_op": 1, "flags": flags}
            specs.append(SystemSpec(name + suffix, "tensorgate", options))
    return specs


def _build() -> dict[str, SystemSpec]:
    batch = {"batching": BATCHING_TIMEOUT_0}
    one_rest_batch = {"workers": 1, "intra_op": 1, "rest": True, **batch}
    one = {"frontends": 1}
    workers = {"flags": (WORKER_RUNS_ONLY,)}
    logged = {"request_log": REQUEST_LOG_RATE}
    specs = [
        SystemSpec("echo", "echo"),
        SystemSpec("tensorgate", "tensorgate", {"workers": 1, "intra_op": 1}),
        SystemSpec("tensorgate-batch", "tensorgate", {"workers": 1, "intra_op": 1, **batch}),
        SystemSpec(
            "tensorgate-batch-log", "tensorgate", {"workers": 1, "intra_op": 1, **batch, **logged}
        ),
        SystemSpec(
            "tensorgate-batch-timing",
            "tensorgate",
            {"workers": 1, "intra_op": 1, **batch, "flags": ("--enable_server_timing",)},
        ),
        SystemSpec("tensorgate-rest", "tensorgate", {"workers": 1, "intra_op": 1, "rest": True}),
        SystemSpec("tensorgate-rest-batch", "tensorgate", one_rest_batch),
        SystemSpec("tensorgate-v2", "tensorgate", {"workers": 1, "intra_op": 1, "v2": True}),
        SystemSpec("tensorgate-2w", "tensorgate", {"workers": 2, "intra_op": 1}),
        SystemSpec("tensorgate-2w-rest", "tensorgate", {"workers": 2, "intra_op": 1, "rest": True}),
        SystemSpec("tensorgate-2w-batch", "tensorgate", {"workers": 2, "intra_op": 1, **batch}),
        SystemSpec("tensorgate-2w-1f", "tensorgate", {"workers": 2, "intra_op": 1, **one}),
        SystemSpec(
            "tensorgate-2w-1f-batch", "tensorgate", {"workers": 2, "intra_op": 1, **one, **batch}
        ),
        SystemSpec("tensorgate-1w2t", "tensorgate", {"workers": 1, "intra_op": 2}),
        SystemSpec("tensorgate-workers", "tensorgate", {"workers": 1, "intra_op": 1, **workers}),
        SystemSpec(
            "tensorgate-workers-batch",
            "tensorgate",
            {"workers": 1, "intra_op": 1, **workers, **batch},
        ),
        SystemSpec(
            "tensorgate-v2-batch", "tensorgate", {"workers": 1, "intra_op": 1, "v2": True, **batch}
        ),
        SystemSpec(
            "tensorgate-rest-2w-batch",
            "tensorgate",
            {"workers": 2, "intra_op": 1, "rest": True, **batch},
        ),
        *_openvino(),
        SystemSpec("triton", "triton", {"instances": 1}),
        SystemSpec("triton-http", "triton", {"instances": 1, "http": True}),
        SystemSpec("triton-2w", "triton", {"instances": 2}),
        SystemSpec("kserve-grpc", "kserve"),
        SystemSpec("kserve-rest", "kserve", {"rest": True}),
        SystemSpec(
            "tensorgate-guarded",
            "tensorgate",
            {"workers": 1, "intra_op": 1, "flags": GUARDED_FLAGS["mlp"]},
        ),
        SystemSpec(
            "tensorgate-2w-guarded",
            "tensorgate",
            {"workers": 2, "intra_op": 1, "flags": GUARDED_FLAGS["resnet50"]},
        ),
        SystemSpec("mlserver", "mlserver", {"parallel_workers": 0}),
        SystemSpec(
            "mlserver-batch",
            "mlserver",
            {"parallel_workers": 0, "max_batch_size": 32, "max_batch_time": 0.001},
        ),
        SystemSpec("mlserver-pw2", "mlserver", {"parallel_workers": 2}),
        SystemSpec(
            "mlserver-pw2-batch",
            "mlserver",
            {"parallel_workers": 2, "max_batch_size": 32, "max_batch_time": 0.001},
        ),
    ]
    for pattern in _FASTAPI_PATTERNS:
        specs.append(
            SystemSpec(f"fastapi-{pattern}", "fastapi", {"pattern": pattern, "workers": 1})
        )
        specs.append(
            SystemSpec(f"fastapi-{pattern}-2w", "fastapi", {"pattern": pattern, "workers": 2})
        )
    return {s.name: s for s in specs}


CATALOG = _build()
"""Every configuration by name. ``-2w``: two server workers (uvicorn workers / MLServer parallel
workers / tensorgate workers / Triton model instances); ``-batch``: batching on (tensorgate:
:data:`BATCHING_TIMEOUT_0`; MLServer: adaptive batching, 32 rows, 1 ms); ``-ov`` / ``-ov-bf16``:
tensorgate with every model on OpenVINO at fp32 / bf16 (:data:`OPENVINO`); ``-rest`` / ``-http``:
the same server driven over its REST API (tensorgate: TF Serving's JSON ``instances``; KServe: v1
``instances``; Triton: HTTP v2 with binary tensors); ``kserve-grpc``, ``triton``,
``tensorgate-v2``: gRPC v2 ModelInfer with ``raw_input_contents``;
``-guarded``: with the admission flags of :data:`GUARDED_FLAGS`; ``-log``: request logging
(``logging_config``) at :data:`REQUEST_LOG_RATE`; ``-timing``: ``--enable_server_timing``
(each beside ``tensorgate-batch``, which has both off, to price the feature); ``-workers``: every
run forced to the worker processes (:data:`WORKER_RUNS_ONLY`), the others placed by the rule.
tensorgate runs its default front ends (``--frontends=0``: one per CPU it may use, so one on one
pinned core and two on the two-core layout) except ``-1f``: one front end (``--frontends=1``, one
process)."""
OPENVINO_SYSTEMS = tuple(spec.name for spec in _openvino())
"""tensorgate's configurations on OpenVINO (plotted in a colour family of their own)."""

TINY = (
    "echo",
    "tensorgate",
    "tensorgate-batch",
    "tensorgate-batch-log",
    "tensorgate-batch-timing",
    "tensorgate-rest",
    "tensorgate-rest-batch",
    "tensorgate-v2",
    "tensorgate-v2-batch",
    "tensorgate-workers",
    "tensorgate-workers-batch",
    "triton",
    "triton-http",
    "kserve-grpc",
    "kserve-rest",
)
"""The tiny-model comparison on one server core (the plan adds its FastAPI and MLServer peers)."""

CALL_SYSTEMS = (
    "echo",
    "tensorgate",
    "tensorgate-batch",
    "tensorgate-workers",
    "tensorgate-workers-batch",
    "tensorgate-rest",
    "tensorgate-rest-batch",
    "tensorgate-v2",
    "tensorgate-v2-batch",
)
"""``python -m bench calls`` and the ``calls`` scenario: Python calls per request for each
protocol (TF Serving's gRPC and REST APIs, V2 ModelInfer) with batching off and on, and where
runs go (placed by the rule; ``-workers``: forced to the workers), beside the echo server."""

LIGHT_LOAD = (
    "echo",
    "tensorgate",
    "tensorgate-batch",
    "tensorgate-rest",
    "tensorgate-rest-batch",
    "fastapi-inline",
)
"""The systems the full plan's sweep always measures at every concurrency (c=1 included): the
light-load goal rows compare tensorgate's gRPC p50 with echo's and its REST p50 with FastAPI
inline's, batching off and on."""

REST_TENSORGATE = ("tensorgate-rest", "tensorgate-rest-batch")
"""tensorgate over TF Serving's REST API, batching off and on; goals compare the better."""

TWO_CORE = (
    "echo",
    "tensorgate-2w",
    "tensorgate-2w-batch",
    "tensorgate-rest-2w-batch",
    "tensorgate-2w-1f",
    "tensorgate-2w-1f-batch",
    "triton-2w",
    "fastapi-inline-2w",
    "fastapi-thread-2w",
    "fastapi-process-2w",
    "mlserver-pw2",
    "mlserver-pw2-batch",
)
"""The tiny-model comparison on both cores (each peer with two workers; tensorgate with its
default front ends and with one)."""

TWO_CORE_CONNECTIONS = 8
"""gRPC connections the two-core saturation point spreads its calls over (several front ends
share a port, and the kernel spreads connections, not calls, over them)."""

ONE_CONNECTION = ("tensorgate-2w", "tensorgate-2w-1f")
"""The two-core one-connection point: default front ends against one (one HTTP/2 connection
lands on one front end)."""

RESNET_PINNED = ("tensorgate", "triton", "tensorgate-ov", "tensorgate-ov-bf16")
"""ResNet50 on one pinned server core (with one raw 1-thread ONNX Runtime process)."""

RESNET_TWO_CORE = (
    "tensorgate-2w",
    "tensorgate-1w2t",
    "triton-2w",
    "fastapi-inline-2w",
    "mlserver-pw2",
    "tensorgate-2w-ov",
    "tensorgate-2w-ov-bf16",
)
"""ResNet50 on both cores (full plan, with the raw configurations of the plan)."""

GRPC_TENSORGATE = {
    "1-core": ("tensorgate", "tensorgate-batch"),
    "2-core": ("tensorgate-2w", "tensorgate-2w-batch"),
    "2-core, one front end": ("tensorgate-2w-1f", "tensorgate-2w-1f-batch"),
}
"""tensorgate's gRPC configurations per core layout; goals compare the better of each pair."""


def family(name: str) -> str:
    """``tensorgate``, ``echo``, ``fastapi``, ``mlserver``, ``triton`` or ``kserve``."""
    return CATALOG[name].kind


def forced_to_workers(name: str) -> bool:
    """Whether ``name`` forces every run to the worker processes (:data:`WORKER_RUNS_ONLY`)."""
    return WORKER_RUNS_ONLY in CATALOG[name].params.get("flags", ())


def is_rest(name: str) -> bool:
    """Whether ``name`` is driven over HTTP (REST / HTTP v2 / FastAPI) rather than gRPC."""
    params = CATALOG[name].params
    return bool(params.get("rest") or params.get("http")) or family(name) == "fastapi"
