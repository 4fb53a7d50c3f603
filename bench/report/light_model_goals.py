"""Light models at the transport floor, with TF Serving's default flags and with batching: the
goal table of the tiny MLP (and ResNet50 staying on the workers), in its order, from one run.

- 1 pinned server core, c=64: ``tensorgate`` (default flags: batching off) at ≤ 1.5× echo's
  server CPU per call and ≥ 1.3× Triton's req/s; ``tensorgate-batch`` (batching on, timeout 0)
  ≤ 1.4× echo's and ≥ 1.5× Triton; ``tensorgate-v2`` (V2 ModelInfer, default flags) ≥ 1.2×
  Triton; ``tensorgate-rest`` and ``tensorgate-rest-batch`` each ≥ 1.0× FastAPI inline. Each row
  names one configuration (no "better of");
- c=1: gRPC p50 ≤ echo's + 0.10 ms (default flags and batching on); REST p50 ≤ FastAPI inline's
  + 0.10 ms (default flags and batching on) (:func:`~bench.report.tiny_rows.p50_over`);
- 2 cores, c=64 over 8 connections: default flags (``tensorgate-2w``) ≥ 1.5× ``triton-2w`` and
  ≥ 1.5× ``fastapi-process-2w``; REST with batching (``tensorgate-rest-2w-batch``) ≥ 1.0×
  ``fastapi-inline-2w``;
- every run forced to the workers, batching on (``tensorgate-workers-batch``): CPU per call ≤
  2.0× echo's;
- worker runs per request (:mod:`bench.measure.counters`) ≤ 0.01 in every round, one row per
  tensorgate tiny system not forced to the workers (one core, two cores, one connection): the
  rule placed the MLP in the front ends and it stayed there;
- ResNet50 stays on the workers (≥ 0.99 worker runs per request in every round, every tensorgate
  system of each layout) and reaches ≥ 0.97× raw ONNX Runtime on one pinned core and on two;
- Python calls per request (``calls`` scenario) for every protocol and configuration: reported.
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import LIGHT_MODELS, per_round, rounds_text, row
from bench.report.tiny_rows import cpu_row, p50_over, raw_ort_rows, resnet_layouts, versus
from bench.systems.catalog import (
    CALL_SYSTEMS,
    CATALOG,
    ONE_CONNECTION,
    RESNET_PINNED,
    RESNET_TWO_CORE,
    TINY,
    TWO_CORE,
    TWO_CORE_CONNECTIONS,
    family,
    forced_to_workers,
)

PLACED_MOST = 0.01
"""Worker runs per request a system placed in the front ends may show in any round."""
ON_WORKERS_LEAST = 0.99
"""Worker runs per request ResNet50 (batching off: one run per call) shows in every round."""
RAW_ORT_LEAST = 0.97
"""ResNet50 on ONNX Runtime against raw ONNX Runtime, one pinned core and two."""
CALL_ROLES = ("gateway", "front end", "worker")
RESNET_SYSTEMS = {"1 pinned core": RESNET_PINNED, "2 cores": RESNET_TWO_CORE}
"""The ``resnet50`` scenario's systems per layout (named by a row this run did not measure)."""
TG, TG_B, TRITON = "tensorgate", "tensorgate-batch", ("triton",)
TINY_1 = "tiny, 1 core, c=64,"


def light_model_rows(sc: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's rows, in its order (every row listed, n/a where this run did not measure)."""
    tiny, two = sc.get("tiny", {}), sc.get("tiny-2core", {})
    sat1, sat2 = tiny.get("saturation", {}), two.get("saturation", {})
    light, runs = tiny.get("light", {}), sc.get("resnet50", {}).get("runs", {})
    one, both = "1 server core, c=64", f"2 cores, c=64 over {TWO_CORE_CONNECTIONS} connections"
    g = LIGHT_MODELS
    rows = [
        cpu_row(f"{TINY_1} default flags: server CPU per call ≤ 1.5× echo's", sat1, (TG,), 1.5, g),
        versus(f"{TINY_1} default flags: ≥ 1.3× Triton", sat1, (TG,), TRITON, 1.3, one, group=g),
        cpu_row(f"{TINY_1} batching on: server CPU per call ≤ 1.4× echo's", sat1, (TG_B,), 1.4, g),
        versus(f"{TINY_1} batching on: ≥ 1.5× Triton", sat1, (TG_B,), TRITON, 1.5, one, group=g),
        versus(
            f"{TINY_1} V2 ModelInfer, default flags: ≥ 1.2× Triton",
            sat1,
            ("tensorgate-v2",),
            TRITON,
            1.2,
            one,
            group=g,
        ),
    ]
    for name, flags in (
        ("tensorgate-rest", "default flags"),
        ("tensorgate-rest-batch", "batching on"),
    ):
        goal = f"{TINY_1} REST, {flags}: ≥ 1.0× FastAPI inline"
        rows.append(versus(goal, sat1, (name,), ("fastapi-inline",), 1.0, one, group=g))
    for name, reference, what in (
        (TG, "echo", "gRPC, default flags"),
        (TG_B, "echo", "gRPC, batching on"),
        ("tensorgate-rest", "fastapi-inline", "REST, default flags"),
        ("tensorgate-rest-batch", "fastapi-inline", "REST, batching on"),
    ):
        goal = f"tiny, 1 core, c=1, {what}: p50 ≤ {reference}'s + 0.10 ms"
        rows.append(p50_over(goal, light, name, reference, 0.10, g))
    for peer in ("triton-2w", "fastapi-process-2w"):
        goal = f"tiny, 2 cores, c=64, default flags: ≥ 1.5× {peer}"
        rows.append(versus(goal, sat2, ("tensorgate-2w",), (peer,), 1.5, both, group=g))
    rows += [
        versus(
            "tiny, 2 cores, c=64, REST with batching: ≥ 1.0× fastapi-inline-2w",
            sat2,
            ("tensorgate-rest-2w-batch",),
            ("fastapi-inline-2w",),
            1.0,
            both,
            group=g,
        ),
        cpu_row(
            f"{TINY_1} runs forced to the workers, batching on: CPU per call ≤ 2.0× echo's",
            sat1,
            ("tensorgate-workers-batch",),
            2.0,
            g,
        ),
        *placed_rows(sc),
        *(on_workers_row(where, section) for where, section in resnet_layouts(runs).items()),
        *raw_ort_rows("ResNet50 on ONNX Runtime: ≥ 0.97× raw ONNX Runtime", runs, RAW_ORT_LEAST, g),
        *(calls_row(name, sc.get("calls", {}).get(name)) for name in CALL_SYSTEMS),
    ]
    return rows


def placed_rows(sc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per tensorgate tiny system not forced to the workers, in the scenarios' order:
    :func:`placed_row` of each."""
    tiny, two = sc.get("tiny", {}), sc.get("tiny-2core", {})
    placed = [n for n in CATALOG if family(n) == "tensorgate" and not forced_to_workers(n)]
    return [
        *(placed_row("1 server core", tiny.get("saturation", {}), n) for n in TINY if n in placed),
        *(placed_row("2 cores", two.get("saturation", {}), n) for n in TWO_CORE if n in placed),
        *(
            placed_row("2 cores, 1 connection", two.get("one_connection", {}), n)
            for n in ONE_CONNECTION
        ),
    ]


def placed_row(where: str, section: dict[str, Any], name: str) -> dict[str, Any]:
    """Worker runs per request of ``name`` at the saturation point, every round: met when every
    round counted them and the highest is ≤ :data:`PLACED_MOST`."""
    goal = f"tiny, not forced to the workers: ≤ {PLACED_MOST} worker runs per request, every round"
    case = f"{where}: {name}"
    target = f"≤ {PLACED_MOST} in every round"
    rounds = per_round(section.get(name))
    counted = [v for v in rounds if v is not None]
    if not counted:
        value = "not counted" if rounds else "not measured"
        return row(goal, case, target, value, group=LIGHT_MODELS)
    top = max(counted)
    missing = len(rounds) - len(counted)
    met = top <= PLACED_MOST and not missing
    note = f"by round: {rounds_text(rounds)}" + (
        f"; {missing} round(s) not counted" if missing else ""
    )
    return row(goal, case, target, f"max {top:.3f} ({len(rounds)} rounds)", met, note, LIGHT_MODELS)


def on_workers_row(where: str, section: dict[str, Any]) -> dict[str, Any]:
    """ResNet50 on the workers: every tensorgate system of the layout (``section``: its runs)
    shows ≥ :data:`ON_WORKERS_LEAST` worker runs per request in every round (batching off: one
    run per call that ran on a worker)."""
    goal = f"ResNet50 stays on the workers: ≥ {ON_WORKERS_LEAST} worker runs per request"
    target = f"≥ {ON_WORKERS_LEAST} in every round"
    ours = {
        n: per_round(p) for n, p in section.items() if n in CATALOG and family(n) == "tensorgate"
    }
    ours = {n: rounds for n, rounds in ours.items() if rounds}
    planned = [n for n in RESNET_SYSTEMS[where] if family(n) == "tensorgate"]
    case = f"{where}: {', '.join(ours or planned)}"
    counted = [v for rounds in ours.values() for v in rounds if v is not None]
    if not counted:
        value = "not counted" if ours else "not measured"
        return row(goal, case, target, value, group=LIGHT_MODELS)
    missing = sum(v is None for rounds in ours.values() for v in rounds)
    low = min(counted)
    met = low >= ON_WORKERS_LEAST and not missing
    note = "; ".join(f"{n}: {rounds_text(rounds)}" for n, rounds in ours.items())
    value = f"min {low:.3f} ({len(counted) + missing} rounds)"
    return row(goal, case, target, value, met, note, LIGHT_MODELS)


def calls_row(name: str, counts: dict[str, Any] | None) -> dict[str, Any]:
    """Python calls per request of ``name`` by process role (``calls`` scenario), reported:
    tensorgate's own code, and in brackets the other Python (grpc's, asyncio's, numpy's)."""
    goal = "Python calls per request, each protocol and configuration"
    case = f"MLP, c=16: {name}"
    if not counts:
        return row(goal, case, "reported", group=LIGHT_MODELS)
    if "error" in counts:
        return row(goal, case, "reported", "failed", None, str(counts["error"])[:200], LIGHT_MODELS)
    parts = [
        f"{role} {c['ours']:.1f} (+{c['other']:.1f})"
        for role in CALL_ROLES
        if (c := counts.get(role)) and c["ours"] + c["other"] >= 0.5
    ]
    note = "tensorgate's own calls per request by process, other Python in brackets"
    return row(goal, case, "reported", "; ".join(parts), None, note, LIGHT_MODELS)
