"""Throughput scenarios: ``limits``, ``tiny``, ``tiny-2core``, ``resnet50`` (with
``openvino-accuracy``, also run alone)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from bench.cpus import layouts
from bench.measure import accuracy, counters
from bench.measure.points import Load, interleaved, run_point, summarize
from bench.report.tiny_rows import ONE_CORE
from bench.scenarios.common import best_of, check_h2load, closed_loop_driver, verify_status
from bench.scenarios.runner import Bench
from bench.systems import raw_ort
from bench.systems.catalog import (
    LIGHT_LOAD,
    ONE_CONNECTION,
    RESNET_PINNED,
    RESNET_TWO_CORE,
    TINY,
    TWO_CORE,
    TWO_CORE_CONNECTIONS,
)
from bench.systems.models import model_path
from bench.systems.targets import Running

MLP_BATCHES = (1, 2, 4, 8, 16, 32)
"""The MLP's batch sizes ``limits`` times (``mlp_model_us_by_batch``: µs of one run of b rows)."""


def limits(bench: Bench) -> None:
    """Single-run model times on one thread, median µs of many runs (ResNet50's throughput limit
    is measured in the ``resnet50`` scenario, interleaved with the servers)."""
    root = bench.ctx.models_root
    mlp = model_path(root, "mlp")
    bench.results["scenarios"]["limits"] = {
        "mlp_model_us": raw_ort.latency_us(mlp, "mlp"),
        "mlp_model_us_batch64": raw_ort.latency_us(mlp, "mlp", batch=64),
        "mlp_model_us_by_batch": {
            str(b): raw_ort.latency_us(mlp, "mlp", batch=b, max_s=1.0) for b in MLP_BATCHES
        },
        "resnet50_model_ms": raw_ort.latency_us(
            model_path(root, "resnet50"), "resnet50", runs=10, max_s=2.0
        )
        / 1000,
    }


def tiny(bench: Bench) -> None:
    plan = bench.plan
    server_cpus, client_cpus = layouts()["1-core"]
    names = [*TINY, *plan.peers]
    section: dict[str, Any] = {
        "layout": "1-core",
        "server_cpus": server_cpus,
        "client_cpus": client_cpus,
        "driver": closed_loop_driver(),
    }
    with bench.systems(names, "mlp", server_cpus, metrics=True) as running:
        checks = {n: verify_status(r, client_cpus) for n, r in running.items()}
        section["verify"] = checks
        top = plan.saturation_concurrency
        load = Load(top, plan.point_s, plan.warmup_s, driver=closed_loop_driver())
        jobs = [(n, _counted_point(r, load, client_cpus)) for n, r in running.items()]
        sat = {k: summarize(v) for k, v in interleaved(jobs, plan.repeats).items()}
        check_h2load(sat, checks)
        section["saturation"] = sat
        # The sweep: every system in the quick plan, in the full one the echo server, tensorgate
        # (its better gRPC configuration, and REST) and each peer family's best; the saturation
        # point is reused, not measured twice.
        sweep_names = list(running) if plan.sweep_all else sweep_systems(sat)
        sweep_names = [n for n in sweep_names if n in running]
        jobs = [
            (
                f"{n}@{c}",
                functools.partial(
                    run_point,
                    running[n],
                    Load(c, plan.sweep_s, plan.warmup_s, driver=closed_loop_driver()),
                    client_cpus,
                ),
            )
            for c in plan.sweep_concurrency
            if c != top
            for n in sweep_names
        ]
        sweep: dict[str, dict[str, Any]] = {n: {str(top): sat[n]} for n in sweep_names}
        for key, runs in interleaved(jobs, plan.repeats).items():
            name, conc = key.rsplit("@", 1)
            summary = summarize(runs)
            check_h2load({name: summary}, checks)
            sweep[name][conc] = summary
        section["sweep"] = sweep
        section["light"] = {n: by_c["1"] for n, by_c in sweep.items() if "1" in by_c}
    bench.results["scenarios"]["tiny"] = section


def tiny_2core(bench: Bench) -> None:
    """Every system of :data:`TWO_CORE` at saturation, gRPC calls spread over
    :data:`TWO_CORE_CONNECTIONS` connections; then, in the same rounds, tensorgate's default front
    ends against one front end with every call on one connection (:data:`ONE_CONNECTION`)."""
    plan = bench.plan
    server_cpus, client_cpus = layouts()["2-core"]
    section: dict[str, Any] = {
        "layout": "2-core",
        "driver": closed_loop_driver(),
        "connections": TWO_CORE_CONNECTIONS,
    }
    with bench.systems(TWO_CORE, "mlp", server_cpus, metrics=True) as running:
        checks = {n: verify_status(r, client_cpus) for n, r in running.items()}
        section["verify"] = checks
        top, driver = plan.saturation_concurrency, closed_loop_driver()
        connections = TWO_CORE_CONNECTIONS
        load = Load(top, plan.point_s, plan.warmup_s, driver=driver, connections=connections)
        one = Load(top, plan.point_s, plan.warmup_s, driver=driver, connections=1)
        jobs = [(n, _counted_point(r, load, client_cpus)) for n, r in running.items()]
        jobs += [
            (ONE_CONNECTION_KEY + n, _counted_point(running[n], one, client_cpus))
            for n in ONE_CONNECTION
            if n in running
        ]
        results = {k: summarize(v) for k, v in interleaved(jobs, plan.repeats).items()}
        sat = {k: v for k, v in results.items() if not k.startswith(ONE_CONNECTION_KEY)}
        check_h2load(sat, checks)
        section["saturation"] = sat
        section["one_connection"] = {
            k.removeprefix(ONE_CONNECTION_KEY): v
            for k, v in results.items()
            if k.startswith(ONE_CONNECTION_KEY)
        }
        check_h2load(section["one_connection"], checks)
    bench.results["scenarios"]["tiny-2core"] = section


def _counted_point(
    running: Running, load: Load, client_cpus: tuple[int, ...]
) -> Callable[[], dict[str, Any]]:
    """A saturation point's job: :func:`run_point` with tensorgate's counters per request
    (:mod:`bench.measure.counters`) when the system serves its metrics page."""
    point = functools.partial(run_point, running, load, client_cpus)
    return functools.partial(counters.counted, running.metrics_url, point)


ONE_CONNECTION_KEY = "1 connection: "
"""Prefix of the run keys of the two-core one-connection point."""


def resnet50(bench: Bench) -> None:
    """tensorgate vs raw ONNX Runtime on ResNet50, all in the same rounds; tensorgate's counters
    per request (:mod:`bench.measure.counters`) show whether its runs stayed on the workers.

    1-core (the tight ratio): tensorgate with one 1-thread worker (ONNX Runtime, OpenVINO fp32,
    OpenVINO bf16), Triton with one 1-thread instance and one raw 1-thread process of each
    runtime (``raw 1p×1t b1``: ONNX Runtime; ``openvino_fp32 1p×1t b1``, ``openvino_bf16 ...``),
    all pinned to the server CPU. 2-core (full plan): tensorgate (ONNX Runtime and OpenVINO) and
    the peers unpinned against the raw configurations of the plan and two 1-thread processes of
    each OpenVINO precision. Then the OpenVINO accuracy table
    (:func:`openvino_accuracy`).
    """
    plan, ctx = bench.plan, bench.ctx
    server_cpus, client_cpus = layouts()["1-core"]
    path = model_path(ctx.models_root, "resnet50")
    two_core = plan.name == "full"
    section: dict[str, Any] = {
        "concurrency": plan.resnet_concurrency,
        "server_cpus_1core": server_cpus,
    }
    load = Load(plan.resnet_concurrency, plan.resnet_s, 1.5, driver="python", timeout_s=60)

    def raw(config: raw_ort.OrtConfig, cpus: tuple[int, ...]) -> Any:
        return functools.partial(raw_ort.throughput, path, "resnet50", config, cpus, plan.resnet_s)

    with (
        bench.systems(RESNET_PINNED, "resnet50", server_cpus, metrics=True) as pinned,
        bench.systems(
            RESNET_TWO_CORE if two_core else (), "resnet50", (), metrics=True
        ) as unpinned,
    ):
        jobs = [(ONE_CORE + n, _counted_point(r, load, client_cpus)) for n, r in pinned.items()]
        jobs.append((ONE_CORE + "raw 1p×1t b1", raw(raw_ort.OrtConfig(1, 1, 1), server_cpus)))
        for runtime in raw_ort.OPENVINO_PRECISIONS:  # OpenVINO's own limit, same threads
            one = raw_ort.OrtConfig(1, 1, 1, runtime)
            jobs.append((ONE_CORE + one.label, raw(one, server_cpus)))
        if two_core:
            jobs += [(n, _counted_point(r, load, ())) for n, r in unpinned.items()]
            jobs += [(f"raw {c.label}", raw(c, ())) for c in map(_ort, plan.ort_configs)]
            for runtime in raw_ort.OPENVINO_PRECISIONS:
                two = raw_ort.OrtConfig(2, 1, 1, runtime)
                jobs.append((two.label, raw(two, ())))
        section["runs"] = {k: summarize(v) for k, v in interleaved(jobs, plan.repeats).items()}
    bench.results["scenarios"]["resnet50"] = section
    openvino_accuracy(bench)


def openvino_accuracy(bench: Bench) -> None:
    """OpenVINO fp32 and bf16 against ONNX Runtime on ResNet50 (untimed; ``resnet50`` runs it
    too, so its rows come with their accuracy), once per run."""
    if "openvino-accuracy" in bench.results["scenarios"]:
        return
    path = model_path(bench.ctx.models_root, "resnet50")
    bench.results["scenarios"]["openvino-accuracy"] = accuracy.compare(path, "resnet50")


def _ort(config: tuple[int, int, int]) -> raw_ort.OrtConfig:
    return raw_ort.OrtConfig(*config)


def sweep_systems(saturation: dict[str, Any]) -> list[str]:
    """The full plan's sweep: :data:`LIGHT_LOAD` (echo, tensorgate's gRPC and REST
    configurations, batching off and on, and FastAPI inline: the light-load rows compare them at
    c=1), then the best configuration of each peer family (by saturating throughput), each once,
    those that ran."""
    peers = [best_of(saturation, f) for f in ("triton", "kserve", "fastapi", "mlserver")]
    names = [n for n in (*LIGHT_LOAD, *peers) if n and n in saturation]
    return list(dict.fromkeys(names))
