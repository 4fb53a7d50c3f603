"""Feature scenarios: ``batching`` and ``tracing`` on/off, ``idle-rss``, ``profile``."""

from __future__ import annotations

import functools
import json
import logging
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.cpus import layouts
from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.load.loadgen import LoadOptions, run_load
from bench.measure import progress
from bench.measure.points import Load, interleaved, median_ci, run_point, stats, summarize
from bench.measure.usage import cpu_by_role, descendants, rss_bytes, thread_cpu
from bench.report.goals import TRACING_CONTROL
from bench.scenarios.common import closed_loop_driver
from bench.scenarios.runner import BENCH_DIR, Bench
from bench.systems.catalog import BATCHING_TIMEOUT_0, CATALOG
from bench.systems.procs import StartFailed, start_with_ready_fd
from bench.systems.start import start
from bench.systems.targets import Running, SystemSpec

log = logging.getLogger(__name__)
BATCHING_CONFIGS = {
    "timeout 0": BATCHING_TIMEOUT_0,
    "timeout 1ms": "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 1000 }\n"
    "max_enqueued_batches { value: 100 }\n",
}
"""Batching parameters compared with batching off (TF Serving's text format)."""


def _not_available(exc: StartFailed) -> str:
    tail = exc.log.strip().splitlines()[-1] if exc.log.strip() else str(exc)
    return f"tensorgate refused to start (exit {exc.exit_code}): {tail[:300]}"


BATCHING_POINTS = {"mlp": (1, 4, 16, 64), "resnet50": (1, 4, 8)}
"""Concurrency levels of the batching comparison, per model."""


def batching(bench: Bench) -> None:
    """Batching off vs on (each of :data:`BATCHING_CONFIGS`) on one server core, for the tiny MLP
    and ResNet50, closed loop at each concurrency of :data:`BATCHING_POINTS`."""
    plan, ctx = bench.plan, bench.ctx
    server_cpus, client_cpus = layouts()["1-core"]
    base = CATALOG["tensorgate"]
    section: dict[str, Any] = {"parameters": BATCHING_CONFIGS, "points": []}
    bench.results["scenarios"]["batching"] = section
    for model, levels in BATCHING_POINTS.items():
        running: dict[str, Running] = {}
        try:
            for label, text in BATCHING_CONFIGS.items():
                path = ctx.logs / f"batching-{label.replace(' ', '-')}.pbtxt"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                flags = ["--enable_batching", f"--batching_parameters_file={path}"]
                params = {**base.params, "flags": flags}
                spec = SystemSpec(f"batching {label}", "tensorgate", params)
                try:
                    running[f"on ({label})"] = start(ctx, spec, model, server_cpus)
                except StartFailed as exc:
                    section.update(available=False, reason=_not_available(exc))
                    return
            running["off"] = start(ctx, base, model, server_cpus)
            section["available"] = True
            duration = plan.resnet_s if model == "resnet50" else plan.point_s
            for conc in levels:
                driver = closed_loop_driver() if model == "mlp" and conc > 1 else "python"
                load = Load(conc, duration, plan.warmup_s, driver=driver)
                jobs = [
                    (k, functools.partial(run_point, r, load, client_cpus))
                    for k, r in running.items()
                ]
                key = f"{model}@{conc}"
                results = interleaved(jobs, plan.repeats, f"{key}, batching {{key}}")
                section[key] = {k: summarize(v) for k, v in results.items()}
                section["points"].append({"model": model, "concurrency": conc, "key": key})
        finally:
            for r in running.values():
                r.stop()


TRACING_SAMPLERS = {"ratio 0": "0", "ratio 1.0": "1.0"}
"""``OTEL_TRACES_SAMPLER_ARG`` of each traced system (``parentbased_traceidratio``); the load
carries no traceparent, so ratio 0 samples nothing and ratio 1.0 every request."""


def _tracing_env(endpoint: str, ratio: str) -> dict[str, str]:
    return {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": ratio,
        "OTEL_SERVICE_NAME": "tensorgate-bench",
    }


def _sink_spans(url: str) -> int:
    with urllib.request.urlopen(f"{url}/stats", timeout=10) as response:
        return int(json.loads(response.read())["spans"])


def _paired_cost(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
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
    a second off (:data:`~bench.report.goals.TRACING_CONTROL`) and both ratios served at once, so
    that every one meets the same machine speed, which on this machine swings by up to 2× within
    seconds, from fresh processes every round (``tracing_side_rounds``); its CPU-per-request cost
    is the goal's figure (≤ 1 % at ratio 0, ≤ 10 % at 1.0, met when the median's 95 % interval
    lies within it), the control's the spread of the measurement itself."""
    plan, ctx = bench.plan, bench.ctx
    server_cpus, client_cpus = layouts()["1-core"]
    base = CATALOG["tensorgate"]
    section: dict[str, Any] = {"samplers": TRACING_SAMPLERS}
    bench.results["scenarios"]["tracing"] = section
    argv = [sys.executable, "-m", "bench.systems.peers.otlp_sink"]
    sink, info = start_with_ready_fd(
        "otlp-sink", argv, ctx.logs / "otlp-sink.log", cpus=client_cpus
    )
    endpoint = f"http://127.0.0.1:{info['port']}"
    control = SystemSpec("tracing off (control)", "tensorgate", base.params)
    specs = {"off": base, TRACING_CONTROL: control}
    for label, ratio in TRACING_SAMPLERS.items():
        params = {**base.params, "env": _tracing_env(endpoint, ratio)}
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
            section.update(available=False, reason=_not_available(exc))
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
                    section["paired_cost"] = _paired_cost(runs)
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
            section["spans_exported"] = _sink_spans(endpoint)
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


def idle_rss(bench: Bench) -> None:
    """RSS of the gateway serving ``models/digits`` (auto workers): at start, idle, after load."""
    argv = [
        sys.executable,
        "-m",
        "gateway",
        "--model_name=digits",
        f"--model_base_path={BENCH_DIR.parent / 'models' / 'digits'}",
        "--port=0",
    ]
    server, _ = start_with_ready_fd("idle-rss", argv, bench.ctx.logs / "idle-rss.log")
    try:
        section: dict[str, Any] = {"at_ready_mb": rss_bytes(server.pid) / 1e6}
        time.sleep(2.0)  # "at idle": let start-up transients settle (a measurement, not a sync)
        section["idle_mb"] = rss_bytes(server.pid) / 1e6
        section["workers_mb"] = [rss_bytes(p) / 1e6 for p in descendants(server.pid)[1:]]
        payload = predict_payload("digits", {"images": np.zeros((1, 64), np.float32)})
        run_load(
            LoadOptions(
                target=f"127.0.0.1:{server.port}",
                method=PREDICT_METHOD,
                payload=payload,
                concurrency=8,
                total=2000,
            )
        )
        section["after_2000_requests_mb"] = rss_bytes(server.pid) / 1e6
    finally:
        server.stop()
    bench.results["scenarios"]["idle-rss"] = section


PROFILED = ("tensorgate", "echo")


def profile(bench: Bench) -> None:
    """Where the CPU goes (py-spy frames, per-thread CPU per request) for :data:`PROFILED`."""
    from bench.measure.profile import profile as run_profile

    section: dict[str, Any] = {}
    for system in PROFILED:
        try:
            path, table = run_profile(system, "mlp", bench.plan.profile_s, bench.out_dir)
        except RuntimeError as exc:
            section[system] = {"error": str(exc)}
            continue
        section[system] = {"file": path.name, "cpu_us_per_request": table}
    bench.results["scenarios"]["profile"] = section
