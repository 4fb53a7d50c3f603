"""The hostile-caller probes of in-front-end runs (``python -m bench probes``): what a caller can
make a front end do with a model it may run on its own event loop.

Each probe starts its own gateways, one per ``--inline_runs`` mode of the plan (``auto``, the
default, is measured; ``never`` is the baseline in the same conditions; ``always`` shows the
wall-clock watch, every ONNX version being placed in front):

- :func:`stalls` (one front end, two workers): bystanders (GetModelStatus and Predict of the
  lightest model over gRPC, ``/healthz`` over REST) call back to back while hostile calls run,
  one kind after the other — a ``Loop`` whose trip count is the caller's value, (xᵀx)² over a
  length the caller picks, calls that fail after the expensive part, one call of millions of
  rows — and the longest wait of any bystander during each is recorded (and, before them, with
  no hostile call). Before them, ordinary traffic (one light call every 1/20 s) is sent alone
  and the light version's placement gauge and the workers' run counters are read around it;
  after them, one call whose output width is the caller's value, with the front end's memory
  around it. The bench MLP is served too: where each mode places it is recorded.
- :func:`kills` (two front ends, tight supervisor pings): a ``Loop`` long enough to outlast the
  ping timeout many times, on several connections at once, bystanders on several connections;
  the supervisor's front-end restarts counted.
- :func:`idle_memory` (two front ends, one worker): each front end's resident memory at rest
  serving a model it should not run (a Conv model of a few ms a row; a tiny file with large
  external weights) and fifty small MLPs, and the time to readiness, for ``auto`` and
  ``never``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.measure.stalls import (
    Bystander,
    Bystanders,
    grpc_caller,
    http_caller,
    longest_ms,
    summary,
    timed_calls,
)
from bench.measure.usage import cpu_seconds
from bench.scenarios.probe_gateway import ProbeGateway, samples, settle, start_gateway
from bench.scenarios.probes_plan import ProbesPlan
from gateway.client.convert import status_request

log = logging.getLogger(__name__)

STATUS_METHOD = "/tensorflow.serving.ModelService/GetModelStatus"
RUNS_IN = "tensorgate_model_runs_in"
WORKER_RUNS = "tensorgate_worker_runs_total"
RESTARTS = "tensorgate_frontend_restarts_total"
BYSTANDER_MODEL = "light"
"""The bystanders' and the ordinary traffic's model: the lightest there is (2x), which
``auto`` places in front however noisy the machine."""
LIGHT_INPUT = np.zeros((1, 1), np.float32)
LIGHT_MODELS = (BYSTANDER_MODEL, "doubled")
"""Two copies of the lightest model (``doubled`` also takes the many-rows call, later)."""


def bystanders(gateway: ProbeGateway, connections: int = 1) -> Bystanders:
    """GetModelStatus and Predict of the light model (gRPC) and ``/healthz`` (REST), each over
    ``connections`` connections."""
    status = status_request(BYSTANDER_MODEL).SerializeToString()
    predict = predict_payload(BYSTANDER_MODEL, {"x": LIGHT_INPUT})
    made = [
        ("GetModelStatus", grpc_caller(gateway.target, STATUS_METHOD, status,
                                       connections=connections)),
        ("Predict light", grpc_caller(gateway.target, PREDICT_METHOD, predict,
                                    connections=connections)),
        ("/healthz", http_caller(gateway.rest_port, "/healthz", connections=connections)),
    ]  # fmt: skip
    return Bystanders([Bystander(name, call, close) for name, (call, close) in made])


def placement(gateway: ProbeGateway) -> dict[str, dict[str, int]]:
    """Where each model's version runs now, by the gauge: model → {``frontend``: front ends
    that run it themselves, ``workers``: front ends that send it to the workers}."""
    found: dict[str, dict[str, int]] = {}
    for labels, value in samples(gateway.page(), RUNS_IN):
        where = found.setdefault(labels.get("model_name", "?"), {})
        where[labels.get("runs_in", "?")] = where.get(labels.get("runs_in", "?"), 0) + int(value)
    return found


def in_front(where: Mapping[str, int]) -> bool:
    """Whether any front end runs the version itself (a :func:`placement` entry)."""
    return where.get("frontend", 0) > 0


def worker_runs(gateway: ProbeGateway) -> float:
    return sum(value for _, value in samples(gateway.page(), WORKER_RUNS))


def _hostile(
    gateway: ProbeGateway,
    watched: Bystanders,
    model: str,
    inputs: Mapping[str, np.ndarray],
    calls: int,
    *,
    at_once: int = 1,
    connections: int = 1,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    """Send ``calls`` hostile Predicts of ``model``; their statuses and times, and what the
    bystanders waited meanwhile."""
    call, close = grpc_caller(
        gateway.target,
        PREDICT_METHOD,
        predict_payload(model, inputs),
        connections=connections,
        timeout_s=timeout_s,
    )
    front_ends = gateway.front_ends()
    cpu = cpu_seconds(front_ends)
    began = time.monotonic()
    try:
        sent = timed_calls([call] * calls, at_once=at_once)
    finally:
        close()
    ended = time.monotonic()
    window = watched.window(began, ended)
    return {
        "hostile": summary(sent),
        "bystanders": window,
        "longest_wait_ms": longest_ms(window),
        "window_s": round(ended - began, 2),
        "front_end_cpu_s": round(cpu_seconds(front_ends) - cpu, 2),
        "load_average": load_average(),
    }


def load_average() -> float:
    """The machine's 1-minute load average (other processes' demand for its CPUs)."""
    with open("/proc/loadavg") as figures:
        return float(figures.read().split()[0])


def _steady(gateway: ProbeGateway, plan: ProbesPlan) -> dict[str, Any]:
    """Ordinary traffic alone: one light Predict every 1/``steady_rate`` s, of the first of
    :data:`LIGHT_MODELS` placed in front (a busy machine may time one of them out of it)."""
    runs_before = worker_runs(gateway)
    placed = placement(gateway)
    before = {"placement": placed, "worker_runs": runs_before}
    model = next((m for m in LIGHT_MODELS if in_front(placed.get(m, {}))), BYSTANDER_MODEL)
    call, close = grpc_caller(
        gateway.target,
        PREDICT_METHOD,
        predict_payload(model, {"x": LIGHT_INPUT}),
    )
    statuses: dict[str, int] = {}
    began = time.monotonic()
    try:
        for n in range(plan.steady_calls):
            delay = began + n / plan.steady_rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # an open loop at a fixed rate
            status = call()
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        close()
    runs_after = worker_runs(gateway)
    after = {"placement": placement(gateway), "worker_runs": runs_after}
    return {
        "calls": plan.steady_calls,
        "rate_per_s": plan.steady_rate,
        "statuses": statuses,
        "before": before,
        "after": after,
        "worker_runs_added": runs_after - runs_before,
        "model": model,
    }


def _wide_output(gateway: ProbeGateway, plan: ProbesPlan) -> dict[str, Any]:
    """One REST call whose output width is its own value: its status and the front end's
    memory before, at its peak and after."""
    import http.client

    width = plan.wide_bytes // 4
    body = b'{"inputs": {"x": [[0.5]], "n": [%d]}}' % width
    rss_before = sum(gateway.front_end_rss_mb())
    gateway.reset_peak()
    connection = http.client.HTTPConnection("127.0.0.1", gateway.rest_port, timeout=120)
    try:
        connection.request("POST", "/v1/models/widened:predict", body=body)
        answer = connection.getresponse()
        answer_bytes = len(answer.read())
        status = answer.status
    finally:
        connection.close()
    time.sleep(1.0)  # let the answer's memory go
    return {
        "output_bytes_asked": width * 4,
        "status": status,
        "answer_bytes": answer_bytes,
        "front_end_rss_mb_before": round(rss_before, 1),
        "front_end_rss_mb_peak": round(gateway.peak_rss_mb(), 1),
        "front_end_rss_mb_after": round(sum(gateway.front_end_rss_mb()), 1),
    }


def stalls(plan: ProbesPlan, root: Path, models: Mapping[str, Path], mode: str) -> dict[str, Any]:
    """The stall probes (module doc) on one gateway under ``--inline_runs=mode``."""
    served = {name: models[name] for name in
              ("mlp", "light", "looped", "failing", "gram", "doubled", "widened")}  # fmt: skip
    gateway = start_gateway(
        root, f"stalls-{mode}", served, [f"--inline_runs={mode}"], workers=2, metrics=True
    )
    try:
        result: dict[str, Any] = {"ready_s": round(gateway.ready_s, 2)}
        result["settle_s"] = round(settle(gateway), 1)
        result["placed_at_start"] = placement(gateway)
        log.info("%s: ordinary traffic (%d calls)", mode, plan.steady_calls)
        result["steady"] = _steady(gateway, plan)
        with bystanders(gateway) as watched:
            began = time.monotonic()
            time.sleep(plan.quiet_s)  # the bystanders alone: the quiet figure
            result["quiet"] = watched.window(began, time.monotonic())
            x2 = np.zeros((1, 2), np.float32)
            log.info("%s: Loop of %d trips", mode, plan.loop_trips)
            result["loop"] = _hostile(
                gateway, watched, "looped",
                {"x": x2, "k": np.array([plan.loop_trips], np.int64)}, plan.hostile_calls,
            )  # fmt: skip
            log.info("%s: (xᵀx)² at length %d", mode, plan.gram_length)
            result["gram"] = _hostile(
                gateway, watched, "gram",
                {"x": np.ones((1, plan.gram_length), np.float32)}, plan.hostile_calls,
            )  # fmt: skip
            log.info("%s: %d calls failing after the work", mode, plan.failing_calls)
            result["failing"] = _hostile(
                gateway, watched, "failing",
                {"x": x2, "k": np.array([plan.failing_trips], np.int64),
                 "z": np.zeros((1, 3), np.float32)},
                plan.failing_calls,
            )  # fmt: skip
            log.info("%s: %d rows in one call", mode, plan.many_rows)
            result["rows"] = _hostile(
                gateway, watched, "doubled",
                {"x": np.ones((plan.many_rows, 1), np.float32)}, plan.hostile_calls,
            )  # fmt: skip
        result["wide_output"] = _wide_output(gateway, plan)
        result["placed_after"] = placement(gateway)
    finally:
        gateway.stop()
    return result


def kills(plan: ProbesPlan, root: Path, models: Mapping[str, Path], mode: str) -> dict[str, Any]:
    """The front-end kill probe (module doc) under ``--inline_runs=mode``."""
    flags = [
        f"--inline_runs={mode}",
        f"--frontend_ping_interval_seconds={plan.ping_interval_s}",
        f"--frontend_ping_timeout_seconds={plan.ping_timeout_s}",
        "--worker_ping_timeout_seconds=600",  # the workers compute for long: not this probe's
        "--shutdown_grace_seconds=1",
    ]
    served = {name: models[name] for name in ("light", "looped")}
    gateway = start_gateway(
        root, f"kills-{mode}", served, flags, frontends=2, workers=2, metrics=True
    )
    try:
        settle(gateway)
        front_ends = gateway.front_ends()
        restarts = sum(v for _, v in samples(gateway.page(), RESTARTS))
        with bystanders(gateway, connections=plan.kill_connections) as watched:
            log.info("%s: %d Loops of %d trips at once", mode, plan.hostile_calls, plan.kill_trips)
            hostile = _hostile(
                gateway, watched, "looped",
                {"x": np.zeros((1, 2), np.float32), "k": np.array([plan.kill_trips], np.int64)},
                plan.hostile_calls, at_once=plan.hostile_calls,
                connections=plan.hostile_calls, timeout_s=plan.kill_deadline_s,
            )  # fmt: skip
        time.sleep(plan.ping_interval_s + plan.ping_timeout_s)  # a last ping round's verdict
        after = gateway.front_ends()
        return {
            **hostile,
            "front_ends_before": front_ends,
            "front_ends_after": after,
            "front_ends_replaced": len(set(front_ends) - set(after)),
            "restarts_counted": sum(v for _, v in samples(gateway.page(), RESTARTS)) - restarts,
            "placed_after": placement(gateway),
            "ping_timeout_s": plan.ping_timeout_s,
            "deadline_s": plan.kill_deadline_s,
        }
    finally:
        gateway.kill()  # its workers are still computing the Loops: nothing to wait for


def idle_memory(
    plan: ProbesPlan, root: Path, case: str, models: Mapping[str, Path]
) -> dict[str, Any]:
    """Front-end memory at rest serving ``models``, under ``auto`` and ``never``."""
    found: dict[str, Any] = {}
    for mode in ("auto", "never"):
        gateway = start_gateway(
            root, f"memory-{case}-{mode}", models,
            [f"--inline_runs={mode}", f"--inline_budget_mb={plan.inline_budget_mb}"],
            frontends=2, workers=1, metrics=True,
        )  # fmt: skip
        try:
            settled = settle(gateway)
            rss = gateway.front_end_rss_mb()
            where = placement(gateway)
            found[mode] = {
                "ready_s": round(gateway.ready_s, 2),
                "settle_s": round(settled, 1),
                "front_end_rss_mb": [round(r, 1) for r in rss],
                "placed_in_front": sum(1 for w in where.values() if in_front(w)),
                "versions": len(models),
            }
        finally:
            gateway.stop()
    found["model_bytes"] = sum(
        f.stat().st_size for path in models.values() for f in path.rglob("*") if f.is_file()
    )
    return found
