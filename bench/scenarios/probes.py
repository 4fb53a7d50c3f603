"""``python -m bench probes``: hostile callers against real gateways, each probe re-measuring
one way a caller could stall, kill or bloat a front end, with its baseline in the same
conditions where there is one (``--inline_runs=never``; a bare grpc.aio server). Written to
``bench/results/<date>-probes/`` (:mod:`bench.report.probes_report`: the goal rows first).

The probes (:data:`PROBES`, in order; ``--only`` runs some): ``stalls`` and ``kills`` and
``idle_memory`` (:mod:`~bench.scenarios.probes_inline`), ``unknown_names``,
``held_connections`` and ``unread_answers`` (:mod:`~bench.scenarios.probes_front`),
``api_docs``, ``large_heads`` and ``unread_rest`` (:mod:`~bench.scenarios.probes_http`). Every
gateway binds 127.0.0.1 and is stopped (or killed) before the next starts; a probe that fails
is recorded with its error and the run goes on. About 12 minutes on 2 CPUs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.report import probes_report
from bench.report.probe_text import met_word
from bench.scenarios import probes_front, probes_http, probes_inline
from bench.scenarios.probes_plan import ProbesPlan, build_models, models_folder
from bench.scenarios.runner import CACHE, run_header
from bench.systems.procs import StartFailed

log = logging.getLogger(__name__)

Probe = Callable[[ProbesPlan, Path, Mapping[str, Path]], Any]


def _per_mode(probe: Callable[..., Any]) -> Probe:
    def run(plan: ProbesPlan, root: Path, models: Mapping[str, Path]) -> Any:
        return {mode: probe(plan, root, models, mode) for mode in plan.modes}

    return run


def _idle_memory(plan: ProbesPlan, root: Path, models: Mapping[str, Path]) -> Any:
    small = {f"small{n}": models[f"small{n}"] for n in range(plan.mlp_count)}
    cases = {"conv": {"conv": models["conv"]}, "external": {"external": models["external"]},
             "small_mlps": small}  # fmt: skip
    return {case: probes_inline.idle_memory(plan, root, case, m) for case, m in cases.items()}


PROBES: dict[str, Probe] = {
    "stalls": _per_mode(probes_inline.stalls),
    "kills": _per_mode(probes_inline.kills),
    "idle_memory": _idle_memory,
    "unknown_names": probes_front.unknown_names,
    "held_connections": probes_front.held_connections,
    "unread_answers": probes_front.unread_answers,
    "api_docs": probes_http.api_docs,
    "large_heads": probes_http.large_heads,
    "unread_rest": probes_http.unread_rest,
}


def run(plan: ProbesPlan, out: Path, only: Sequence[str] = ()) -> dict[str, Any]:
    """Run the probes ``only`` names (all when empty) under ``plan``; write and return the
    results. ValueError for an unknown probe."""
    names = list(only) or list(PROBES)
    unknown = sorted(set(names) - set(PROBES))
    if unknown:
        raise ValueError(f"unknown probe(s) {', '.join(unknown)}; known: {', '.join(PROBES)}")
    began = time.monotonic()
    root = CACHE / "probes" / out.name
    models = build_models(CACHE / "probes" / models_folder(plan), plan)
    results: dict[str, Any] = {
        "kind": "probes",
        "run": run_header(out.name, plan),
        "probes": {},
        "failed": {},
    }
    for name in names:
        log.info("probe %s", name)
        started = time.monotonic()
        try:
            results["probes"][name] = PROBES[name](plan, root / "gateways", models)
        except (StartFailed, OSError, RuntimeError, ValueError) as exc:
            log.exception("probe %s failed", name)
            results["failed"][name] = f"{type(exc).__name__}: {exc}"
        log.info("probe %s took %.0f s", name, time.monotonic() - started)
        results["run"]["elapsed_s"] = time.monotonic() - began
        probes_report.write(results, out)  # a partial report survives an interrupted run
    return results


def summary_text(results: Mapping[str, Any]) -> str:
    """The goal rows as plain lines (what the command prints)."""
    lines = []
    for goal in probes_report.goal_rows(dict(results)):
        word = met_word(goal)
        met = word.upper() if word == "not met" else word
        lines.append(f"[{met}] {goal['goal']} — {goal['case']}: {goal['value']}")
    return "\n".join(lines) + "\n"
