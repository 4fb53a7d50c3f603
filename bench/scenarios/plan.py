"""What a run measures and for how long: the quick (~5 min) and full (< 30 min) plans.

Which CPUs the servers and the client get (the ``1-core`` and ``2-core`` layouts) is
:func:`bench.cpus.layouts`.
"""

from __future__ import annotations

from dataclasses import dataclass

SCENARIOS = (
    "limits",
    "tiny",
    "tiny-2core",
    "resnet50",
    "openvino-accuracy",
    "overload",
    "ramp",
    "batching",
    "tracing",
    "idle-rss",
    "profile",
    "calls",
    "soak",
    "chaos",
    "seeds",
    "drain",
)


@dataclass(frozen=True)
class Plan:
    """Durations in seconds; ``repeats`` interleaved rounds per measured point."""

    name: str
    repeats: int
    point_s: float
    warmup_s: float
    saturation_concurrency: int
    sweep_concurrency: tuple[int, ...]
    sweep_s: float
    sweep_all: bool
    """Sweep every 1-core system (else echo, tensorgate over gRPC and REST with batching off and
    on, FastAPI inline and each peer family's best:
    :func:`bench.scenarios.throughput.sweep_systems`)."""
    resnet_s: float
    resnet_concurrency: int
    ort_configs: tuple[tuple[int, int, int], ...]
    """Raw ONNX Runtime configurations ``(processes, threads, batch)`` on both cores (full plan;
    the 1-core pair, tensorgate vs one raw 1-thread process, runs in every plan)."""
    overload_factors: tuple[float, ...]
    overload_s: float
    overload_models: tuple[str, ...]
    overload_repeats: int
    overload_timeout_s: float
    ramp_model: str
    ramp_users: int
    ramp_step_s: float
    ramp_plateau_s: float
    peers: tuple[str, ...]
    """Peer systems in the 1-core tiny-model comparison."""
    tracing_repeats: int = 6
    """Rounds of the ``tracing`` scenario in turn (throughput, which drifts with this machine's
    speed on a scale of seconds)."""
    tracing_side_rounds: int = 30
    """Rounds of the ``tracing`` scenario side by side, the goal's figure: a median over rounds
    from fresh processes, each carrying a speed of its own of a few percent, so it needs many
    to bound a 1 % cost."""
    profile_s: float = 8.0
    """py-spy sampling time per profiled system (``profile`` scenario)."""
    soak_s: float = 600.0
    soak_rps: float = 300.0
    soak_sample_s: float = 5.0
    """``soak``: open-loop rate, length and RSS/fd sampling period of the steady-load run."""
    chaos_s: float = 60.0
    chaos_rps: float = 300.0
    chaos_kill_every_s: float = 5.0
    """``chaos``: a worker of ``tensorgate-2w`` is SIGKILLed this often under the open loop."""
    seeds_users: tuple[int, ...] = (20, 60)
    seeds_plateau_s: int = 20
    """``seeds``: Locust users at the end of each ramp (one added a second; the JPEG runs take
    each, the float-row runs the first) and the plateau's length: 20 users of one request a
    second are about ResNet50's capacity on 2 cores here, 60 well past it (the seeds' 150 users
    on 8 nodes × 2 vCPU: 9 a core)."""
    drain_runs: int = 20
    """``drain``: SIGTERM-under-load runs with the default front ends, and as many again after
    a front end was SIGKILLed and replaced (lost calls counted)."""
    scenarios: tuple[str, ...] = SCENARIOS


QUICK = Plan(
    name="quick",
    repeats=2,
    tracing_repeats=2,
    tracing_side_rounds=2,
    point_s=1.0,
    warmup_s=0.5,
    saturation_concurrency=64,
    sweep_concurrency=(1, 64),
    sweep_s=1.0,
    sweep_all=True,
    resnet_s=2.5,
    resnet_concurrency=4,
    ort_configs=((2, 1, 1),),
    overload_factors=(1.0, 2.0),
    overload_s=2.5,
    overload_models=("mlp",),
    overload_repeats=1,
    overload_timeout_s=2.0,
    ramp_model="mlp",
    ramp_users=8,
    ramp_step_s=0.5,
    ramp_plateau_s=1.5,
    peers=("fastapi-inline", "fastapi-thread", "mlserver"),
    soak_s=20.0,
    soak_rps=100.0,
    soak_sample_s=1.0,
    chaos_s=12.0,
    chaos_rps=100.0,
    seeds_users=(2, 4),
    seeds_plateau_s=4,
    scenarios=(
        "limits",
        "tiny",
        "resnet50",
        "overload",
        "ramp",
        "batching",
        "tracing",
        "idle-rss",
        "soak",
        "chaos",
    ),
)

FULL = Plan(
    name="full",
    repeats=3,
    point_s=3.0,
    warmup_s=1.0,
    saturation_concurrency=64,
    sweep_concurrency=(1, 4, 16, 64, 256),
    sweep_s=2.0,
    sweep_all=False,
    resnet_s=6.0,
    resnet_concurrency=8,
    ort_configs=((1, 2, 1), (2, 1, 1), (2, 1, 8)),
    overload_factors=(0.5, 0.75, 1.0, 1.5, 2.0),
    overload_s=6.0,
    overload_models=("mlp", "resnet50"),
    overload_repeats=3,
    overload_timeout_s=2.0,
    ramp_model="resnet50",
    ramp_users=20,
    ramp_step_s=1.0,
    ramp_plateau_s=10.0,
    peers=(
        "fastapi-inline",
        "fastapi-thread",
        "fastapi-process",
        "mlserver",
        "mlserver-batch",
    ),
    scenarios=tuple(s for s in SCENARIOS if s != "drain"),  # ~15 min of its own: --only drain
)
