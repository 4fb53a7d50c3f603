"""Load-shape scenarios: ``overload`` (open-loop rate sweeps) and ``ramp`` (the seed's ramp)."""

from __future__ import annotations

import functools
from typing import Any

from bench.cpus import layouts
from bench.load.loadgen import StepSchedule
from bench.measure.points import Load, interleaved, run_point, summarize
from bench.scenarios.runner import Bench


def overload(bench: Bench) -> None:
    plan = bench.plan
    section: dict[str, Any] = {"timeout_s": plan.overload_timeout_s}
    cases = (  # with admission at the transport and a latency target (catalog.GUARDED_FLAGS)
        ("mlp", "1-core", "tensorgate-guarded", plan.saturation_concurrency),
        ("resnet50", "2-core", "tensorgate-2w-guarded", plan.resnet_concurrency),
    )
    for model, layout, name, conc in cases:
        if model not in plan.overload_models:
            continue
        server_cpus, client_cpus = layouts()[layout]
        with bench.systems([name], model, server_cpus) as running:
            if name not in running:
                continue
            r = running[name]
            closed = Load(conc, plan.point_s, plan.warmup_s, driver="python", timeout_s=60)
            cap_runs = interleaved(
                [("closed", functools.partial(run_point, r, closed, client_cpus))],
                plan.repeats,
                f"{name} ({model}) capacity, closed loop",
            )["closed"]
            capacity = summarize(cap_runs)
            rate = capacity.get("goodput", {}).get("median", 0.0)
            points: dict[str, Any] = {}
            if rate > 0:
                jobs = [
                    (
                        f"{f:g}",
                        functools.partial(
                            run_point,
                            r,
                            Load(
                                conc,
                                plan.overload_s,
                                1.0,
                                rps=f * rate,
                                driver="python",
                                timeout_s=plan.overload_timeout_s,
                            ),
                            client_cpus,
                        ),
                    )
                    for f in plan.overload_factors
                ]
                points = {
                    k: summarize(v)
                    for k, v in interleaved(
                        jobs, plan.overload_repeats, f"{name} ({model}) at {{key}}× capacity"
                    ).items()
                }
            section[model] = {
                "system": name,
                "layout": layout,
                "capacity": capacity,
                "capacity_rps": rate,
                "points": points,
            }
    bench.results["scenarios"]["overload"] = section


def ramp(bench: Bench) -> None:
    plan = bench.plan
    model = plan.ramp_model
    layout = "2-core" if model == "resnet50" else "1-core"
    server_cpus, client_cpus = layouts()[layout]
    if model == "resnet50":
        names = ["tensorgate-2w"] + (
            ["fastapi-inline-2w", "mlserver-pw2"] if plan.name == "full" else []
        )
    else:
        names = ["tensorgate"] + (["fastapi-inline", "mlserver"] if plan.name == "full" else [])
    schedule = StepSchedule(1, 1, plan.ramp_step_s, plan.ramp_users)
    duration = plan.ramp_users * plan.ramp_step_s + plan.ramp_plateau_s
    load = Load(
        plan.ramp_users,
        duration,
        0.0,
        driver="python",
        timeout_s=60,
        per_second_latency=True,
        schedule=schedule,
    )
    section: dict[str, Any] = {
        "model": model,
        "layout": layout,
        "users": plan.ramp_users,
        "step_s": plan.ramp_step_s,
        "plateau_s": plan.ramp_plateau_s,
        "systems": {},
    }
    with bench.systems(names, model, server_cpus) as running:
        for n, r in running.items():
            section["systems"][n] = summarize(
                interleaved([(n, functools.partial(run_point, r, load, client_cpus))], 1)[n]
            )
    bench.results["scenarios"]["ramp"] = section
