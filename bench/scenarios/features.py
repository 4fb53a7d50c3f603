"""Feature scenarios: ``batching`` on/off, ``idle-rss``, ``profile`` (``tracing`` has its own)."""

from __future__ import annotations

import functools
import sys
import time
from typing import Any

import numpy as np

from bench.cpus import layouts
from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.load.loadgen import LoadOptions, run_load
from bench.measure.points import Load, interleaved, run_point, summarize
from bench.measure.usage import descendants, pss_bytes, role_of, rss_bytes
from bench.scenarios.common import closed_loop_driver, not_available
from bench.scenarios.runner import BENCH_DIR, CACHE, Bench
from bench.systems.catalog import BATCHING_TIMEOUT_0, CATALOG
from bench.systems.procs import StartFailed, start_with_ready_fd
from bench.systems.start import start
from bench.systems.targets import Running, SystemSpec

BATCHING_CONFIGS = {
    "timeout 0": BATCHING_TIMEOUT_0,
    "timeout 1ms": "max_batch_size { value: 32 }\nbatch_timeout_micros { value: 1000 }\n"
    "max_enqueued_batches { value: 100 }\n",
}
"""Batching parameters compared with batching off (TF Serving's text format)."""


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
                    section.update(available=False, reason=not_available(exc))
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


def idle_rss(bench: Bench) -> None:
    """RSS of the gateway serving ``models/digits`` (auto workers) as one process: at start,
    idle, after load; then the memory each extra front end adds (:func:`front_end_rss`)."""
    argv = [*_digits_argv(), "--frontends=1"]
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
    section["front_ends"] = front_end_rss(bench)
    bench.results["scenarios"]["idle-rss"] = section


FRONT_END_COUNTS = (1, 2, 3)
"""``--frontends`` values whose idle memory :func:`front_end_rss` compares."""


def _digits_argv() -> list[str]:
    return [
        sys.executable,
        "-m",
        "gateway",
        "--model_name=digits",
        f"--model_base_path={BENCH_DIR.parent / 'models' / 'digits'}",
        "--port=0",
        "--workers=1",
    ]


def front_end_rss(bench: Bench) -> dict[str, Any]:
    """The idle memory of the whole process tree with 1, 2 and 3 front ends (one worker): each
    process's RSS and the tree's RSS and PSS (PSS shares each page among the processes that map
    it, so the tree's PSS is the memory the node pays; RSS counts shared libraries in every
    process). ``per_extra_mb``: what one more front end adds, from 2 to 3 (the supervisor is
    there already)."""
    trees: dict[str, Any] = {}
    for count in FRONT_END_COUNTS:
        log = bench.ctx.logs / f"idle-rss-{count}f.log"
        server, _ = start_with_ready_fd("idle-rss", [*_digits_argv(), f"--frontends={count}"], log)
        try:
            time.sleep(2.0)  # as above: a measurement of the settled state, not a sync
            pids = descendants(server.pid)
            trees[str(count)] = {
                "rss_mb": {str(p): rss_bytes(p) / 1e6 for p in pids},
                "tree_rss_mb": sum(rss_bytes(p) for p in pids) / 1e6,
                "tree_pss_mb": sum(pss_bytes(p) for p in pids) / 1e6,
                "roles": {str(p): role_of(p) for p in pids},
            }
        finally:
            server.stop()
    two, three = trees["2"], trees["3"]
    front_rss = [mb for pid, mb in three["rss_mb"].items() if three["roles"][pid] == "front end"]
    return {
        "trees": trees,
        "per_extra_mb": {
            "tree_pss": three["tree_pss_mb"] - two["tree_pss_mb"],
            "tree_rss": three["tree_rss_mb"] - two["tree_rss_mb"],
            "front_end_rss": sum(front_rss) / max(1, len(front_rss)),
        },
    }


PROFILED = ("tensorgate", "echo")


def profile(bench: Bench) -> None:
    """Where the CPU goes (py-spy frames, per-thread CPU per request) for :data:`PROFILED`."""
    from bench.measure.profile import profile as run_profile

    section: dict[str, Any] = {}
    for system in PROFILED:
        try:
            path, table = run_profile(system, "mlp", bench.plan.profile_s, bench.out_dir, CACHE)
        except RuntimeError as exc:
            section[system] = {"error": str(exc)}
            continue
        section[system] = {"file": path.name, "cpu_us_per_request": table}
    bench.results["scenarios"]["profile"] = section


def calls(bench: Bench) -> None:
    """Python calls per request (exact counts, :mod:`bench.measure.pycalls`) for each protocol
    and where runs go (:data:`bench.systems.catalog.CALL_SYSTEMS`), MLP at concurrency 16."""
    from bench.measure.pycalls import count
    from bench.systems.catalog import CALL_SYSTEMS

    section: dict[str, Any] = {}
    for system in CALL_SYSTEMS:
        try:
            section[system] = count(bench.ctx, CATALOG[system], "mlp")
        except Exception as exc:
            section[system] = {"error": f"{type(exc).__name__}: {exc}"}
    bench.results["scenarios"]["calls"] = section
