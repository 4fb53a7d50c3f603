"""What ``python -m bench probes`` sends and how much of it (:class:`ProbesPlan`), and the models
it serves (:func:`build_models`), built once under the run's folder with ``onnx.helper``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.systems import models as builders

MIB = 2**20


@dataclass(frozen=True)
class ProbesPlan:
    """The sizes of the probes (the defaults re-create the callers the probes are modelled on)."""

    modes: tuple[str, ...] = ("auto", "never", "always")
    """``--inline_runs`` modes of the stall and kill probes: ``auto`` is measured, ``never`` is
    the baseline, ``always`` places every ONNX version in front (the wall-clock watch)."""
    loop_trips: int = 10**6
    """A ``Loop``'s trip count, the caller's value."""
    gram_length: int = 3000
    """The caller-chosen length L of (xᵀx)²'s input."""
    hostile_calls: int = 3
    """Hostile calls of each kind (Loop, (xᵀx)², many rows; and at once in the kill probe)."""
    failing_trips: int = 10**5
    """The trip count of the calls that fail after their Loop."""
    failing_calls: int = 10
    many_rows: int = 4_000_000
    """Rows of one call to the lightest model."""
    wide_bytes: int = 72 * 10**6
    """Output bytes a caller asks of the widened model (over the workers' 64 MiB output area)."""
    quiet_s: float = 2.0
    """Seconds the bystanders run alone first (their figure without hostile calls)."""
    steady_calls: int = 300
    steady_rate: float = 20.0
    """Ordinary traffic: calls, and calls per second."""
    kill_trips: int = 16 * 10**6
    """The trip count of the Loop sent to outlast the supervisor's pings."""
    kill_deadline_s: float = 20.0
    """The deadline of those calls (their runs on a worker take longer; nobody waits for them)."""
    kill_connections: int = 4
    """Connections per bystander with two front ends (each connection lands on one of them)."""
    ping_interval_s: float = 0.5
    ping_timeout_s: float = 2.0
    """``--frontend_ping_interval_seconds`` and ``--frontend_ping_timeout_seconds`` there."""
    external_mib: int = 96
    """External weights beside a tiny model file."""
    inline_budget_mb: int = 64
    """``--inline_budget_mb`` of the idle-memory gateways (its default)."""
    mlp_count: int = 50
    mlp_hidden: int = 512
    """Small MLPs served at once, and their hidden width (~1.2 MB of file each)."""
    unknown_calls: int = 20_000
    """Token-less REST calls naming random models."""
    idle_connections: int = 1024
    """Unauthenticated keep-alive REST connections held (``--rest_api_max_connections``)."""
    watch_connections: int = 1024
    """gRPC connections each holding a health ``Watch`` (``--grpc_max_connections``)."""
    hold_s: float = 12.0
    """Seconds a token holder tries, once a second, while the connections are held."""
    repoll_s: float = 3.0
    """How often the held REST connections poll ``/healthz``."""
    short_idle_s: float = 3.0
    """``--grpc_idle_timeout_seconds`` of the variant that shows the ``Watch`` bound."""
    unread_calls: int = 200
    """Predicts with large answers sent on one connection whose window never opens."""
    unread_baseline_calls: int = 48
    """The same on a bare grpc.aio server (all held: it has no bound)."""
    answer_mib: int = 4
    inflight_mib: int = 64
    """Each answer's size, and ``--max_inflight_bytes``."""
    docs_models: int = 200
    docs_gets: int = 50
    head_connections: int = 1000
    """Connections parking unfinished request heads."""
    parked_head_bytes: int = 24_000
    """Header bytes each parks in the second round (under the cap)."""
    write_timeout_s: float = 5.0
    """``--rest_api_write_timeout_seconds`` of the write-timeout probe."""


def build_models(root: Path, plan: ProbesPlan) -> dict[str, Path]:
    """Every model the probes serve, under ``root`` (name → base path), built when missing."""
    made: dict[str, Callable[[Path], Path]] = {
        "mlp": builders.build_mlp,
        "light": builders.doubled,
        "looped": builders.looped,
        "failing": functools.partial(builders.looped, addend=True),
        "gram": builders.gram_squared,
        "doubled": builders.doubled,
        "widened": builders.widened,
        "tiled": functools.partial(builders.tiled, width=plan.answer_mib * MIB // 4),
        "conv": builders.conv_stack,
        "external": functools.partial(
            builders.external_weights, weight_bytes=plan.external_mib * MIB
        ),
    }
    for n in range(plan.mlp_count):
        made[f"small{n}"] = functools.partial(builders.build_mlp, seed=n, hidden=plan.mlp_hidden)
    paths = {}
    for name, build in made.items():
        path = root / name / "1" / "model.onnx"
        if not path.exists():
            build(path)
        paths[name] = root / name
    return paths


def models_folder(plan: ProbesPlan) -> str:
    """The name of the folder the models of ``plan`` are kept in between runs: one per set of
    the sizes that change a model's file (more MLPs only add files)."""
    return f"models-{plan.external_mib}mib-{plan.mlp_hidden}wide-{plan.answer_mib}mib"
