"""The ``tracing`` scenario: what tracing costs tensorgate on the tiny MLP on one server core,
off against sample ratios 0 and 1.0 (:data:`~bench.systems.tracing.TRACING_SAMPLERS`), in turn and
side by side (see :func:`tracing`)."""

from __future__ import annotations

import functools
import logging
import statistics
import threading
from collections.abc import Callable, Sequence
from typing import Any

from bench.cpus import layouts
from bench.measure import progress
from bench.measure.points import Load, interleaved, median_ci, run_point, stats, summarize
from bench.measure.usage import cpu_by_role, descendants, thread_cpu
from bench.scenarios.common import closed_loop_driver, not_available
from bench.scenarios.runner import Bench
from bench.systems.catalog import CATALOG
from bench.systems.procs import StartFailed
from bench.systems.start import start
from bench.systems.targets import Running, SystemSpec
from bench.systems.tracing import (
    TRACING_CONTROL,
    TRACING_SAMPLERS,
    sink_spans,
    start_sink,
    tracing_env,
)

log = logging.getLogger(__name__)


def paired_cost(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """Per sampler: the throughput lost against tracing off within each round (the two ran back
    to back), as median / min / max over the rounds where both succeeded."""
    out = {}
    for label in TRACING_SAMPLERS:
        pairs = zip(runs.get(label, []), runs.get("off", []), strict=False)
        costs = [1 - t["rps"] / o["rps"] for t, o in pairs if t.get("rps") and o.get("rps")]
        out[label] = stats(costs)
    return out


def _side_by_side(
    start_all: Callable[[Sequence[str]], dict[str, Running]],
    names: Sequence[str],
    load: Load,
    client_cpus: tuple[int, ...],
    rounds: int,
) -> dict[str, Any]:
    """``rounds`` rounds of the systems ``names`` (which ``start_all`` starts, in the order
    given), served at once on the one server core, each by its own closed loop, from fresh
    processes every round (a process keeps a speed of its own, a few percent either way, for as
    long as it lives), started and loaded in an order turned by one every round (where a
    system stands in that order shows: started always second, an untraced copy of ``off`` cost
    1.1 % more over 30 rounds): each one's CPU µs per request, and for every system but
    ``off`` its cost against off within each round, ``1 - cpu(off) / cpu(system)`` (on a
    saturated core, throughput is the inverse of CPU per request), as median / min / max over
    the rounds, with the median's 95 % interval (``ci``); and each one's CPU µs per request by
    role (``roles_us_per_request``: :data:`~bench.measure.usage.CPU_ROLES`, the mean over the
    rounds, from per-thread counters in clock ticks)."""
    cpu: dict[str, list[float]] = {}
    roles: dict[str, dict[str, list[float]]] = {}
    for round_no in range(rounds):
        progress.step(f"tracing side by side · round {round_no + 1}/{rounds}")
        turn = round_no % len(names)
        try:
            running = start_all([*names[turn:], *names[:turn]])
        except StartFailed as exc:  # one lost round; the others stand
            log.warning("tracing side by side: a system did not start: %s", exc)
            continue
        out: dict[str, dict[str, Any]] = {}
        try:
            threads = [
                threading.Thread(target=_into, args=(out, key, r, load, client_cpus))
                for key, r in running.items()
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            for r in running.values():
                r.stop()
        if all(out.get(key, {}).get("server_cpu_us_per_request") for key in running):
            for key in running:
                cpu.setdefault(key, []).append(float(out[key]["server_cpu_us_per_request"]))
                for role, value in out[key].get("roles_us_per_request", {}).items():
                    roles.setdefault(key, {}).setdefault(role, []).append(value)
    off = cpu.get("off", [])
    cost = {}
    for key, values in cpu.items():
        if key != "off":
            costs = [1 - o / t for o, t in zip(off, values, strict=True)]
            cost[key] = {**stats(costs), "ci": median_ci(costs)}
    order = [key for key in names if key in cpu]
    return {
        "cpu_us_per_request": {key: stats(cpu[key]) for key in order},
        "cost": {key: cost[key] for key in order if key in cost},
        "roles_us_per_request": {
            key: {role: statistics.fmean(v) for role, v in roles[key].items()}
            for key in order
            if key in roles
        },
    }


def _into(
    out: dict[str, Any], key: str, r: Running, load: Load, client_cpus: tuple[int, ...]
) -> None:
    """``run_point`` into ``out[key]``, with the server's CPU µs per request by role
    (:func:`~bench.measure.usage.cpu_by_role`) under ``roles_us_per_request``."""
    try:
        pids = descendants(r.server.pid)
        before = thread_cpu(pids)
        result = run_point(r, load, client_cpus)
        roles = cpu_by_role(before, thread_cpu(pids), r.server.pid)
        served = result.get("rps", 0.0) * (load.duration_s + load.warmup_s)
        if served > 0:
            result["roles_us_per_request"] = {k: v / served * 1e6 for k, v in roles.items()}
        out[key] = result
    except Exception as exc:  # one failed round is left out, the others stand
        log.warning("tracing side by side: %s failed: %s", key, exc)


def tracing(bench: Bench) -> None:
    """Throughput and CPU of the tiny MLP on one server core with tracing off, and on at sample
    ratios 0 and 1.0 (spans exported over OTLP/HTTP to a sink on the client's core).

    Taken two ways. In turn (interleaved, ``tracing_repeats`` rounds), saturating and
    at concurrency 1: ``cost`` is each ratio's throughput loss against off from the medians,
    ``paired_cost`` the median of the per-round losses. Side by side (``side_by_side``): off,
    a second off (:data:`~bench.systems.tracing.TRACING_CONTROL`) and both ratios served at once, so
    that every one meets the same machine speed, which on this machine swings by up to 2× within
    seconds, from fresh processes every round (``tracing_side_rounds``); its CPU-per-request cost
    is the goal's figure (≤ 1 % at ratio 0, ≤ 10 % at 1.0, met when the median's 95 % interval
    lies within it), the control's the spread of the measurement itself."""
    plan, ctx = bench.plan, bench.ctx
    server_cpus, client_cpus = layouts()["1-core"]
    base = CATALOG["tensorgate"]
    section: dict[str, Any] = {"samplers": TRACING_SAMPLERS}
    bench.results["scenarios"]["tracing"] = section
    sink, endpoint = start_sink(ctx.logs, client_cpus)
    control = SystemSpec("tracing off (control)", "tensorgate", base.params)
    specs = {"off": base, TRACING_CONTROL: control}
    for label, ratio in TRACING_SAMPLERS.items():
        params = {**base.params, "env": tracing_env(endpoint, ratio)}
        specs[label] = SystemSpec(f"tracing {label}", "tensorgate", params)

    def start_all(names: Sequence[str]) -> dict[str, Running]:
        running: dict[str, Running] = {}
        try:
            for name in names:
                running[name] = start(ctx, specs[name], "mlp", server_cpus)
        except BaseException:
            for r in running.values():
                r.stop()
            raise
        return running

    saturating = Load(
        plan.saturation_concurrency, plan.point_s, plan.warmup_s, driver=closed_loop_driver()
    )
    points = {"mlp": saturating, "mlp@1": Load(1, plan.point_s, plan.warmup_s)}
    try:
        try:
            running = start_all(["off", *TRACING_SAMPLERS])
        except StartFailed as exc:
            section.update(available=False, reason=not_available(exc))
            return
        try:
            for key, load in points.items():
                jobs = [
                    (k, functools.partial(run_point, r, load, client_cpus))
                    for k, r in running.items()
                ]
                runs = interleaved(jobs, plan.tracing_repeats, f"tracing {key} {{key}}")
                section[key] = {k: summarize(v) for k, v in runs.items()}
                if key == "mlp":
                    section["paired_cost"] = paired_cost(runs)
        finally:
            for r in running.values():
                r.stop()
        side_names = ["off", TRACING_CONTROL, *TRACING_SAMPLERS]
        section["side_by_side"] = _side_by_side(
            start_all,
            side_names,
            saturating,
            client_cpus,
            plan.tracing_side_rounds,
        )
    finally:
        try:
            section["spans_exported"] = sink_spans(endpoint)
        finally:
            sink.stop()
    section["available"] = section["spans_exported"] > 0
    if not section["available"]:
        section["reason"] = "tracing at ratio 1.0 exported no span to the OTLP sink"
    off = section["mlp"]["off"]
    section["cost"] = {
        label: 1 - section["mlp"][label]["rps"]["median"] / off["rps"]["median"]
        for label in TRACING_SAMPLERS
        if off.get("rps") and section["mlp"][label].get("rps")
    }
