"""The goal rows of the in-front-end-run probes of ``python -m bench probes``: a front end never
holds its other callers longer than :data:`STALL_MS` for a hostile call, is never killed for
one, keeps at rest no more than :data:`RSS_RATIO` times the memory of ``--inline_runs=never``
for models it does not run (and runs others within ``--inline_budget_mb``), answers a
too-large output as the workers do, and keeps a light version in place under ordinary traffic.
Each row is judged from the run's own figures (``results["probes"]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.goal_rows import row
from bench.report.probe_text import dig, ms, size, statuses

GROUP = "probes"
STALL_MS = 100.0
"""The longest a bystander may wait on a front end while hostile calls run (ms)."""
RSS_RATIO = 1.5
"""Idle front-end memory against ``--inline_runs=never``'s, at most."""
Results = dict[str, Any]

STALL_CASES = (
    ("loop", "a Loop whose trip count is the caller's value ({loop_trips:,})"),
    ("gram", "(xᵀx)² over a caller-chosen length L = {gram_length}"),
    ("failing", "{failing_calls} calls failing after their Loop ({failing_trips:,} trips)"),
    ("rows", "{many_rows:,} rows in one call to the lightest model"),
)


def _stall_rows(results: Results) -> list[dict[str, Any]]:
    plan = dig(results, "run", "plan") or {}
    stalls = dig(results, "probes", "stalls") or {}
    rows = []
    for key, case in STALL_CASES:
        found = {mode: dig(stalls, mode, key, "longest_wait_ms") for mode in stalls}
        auto = found.get("auto")
        hostile = dig(stalls, "auto", key, "hostile", "statuses")
        notes = [f"{mode}: {ms(v)}" for mode, v in found.items() if mode != "auto"]
        quiet = [dig(stalls, m, "quiet") for m in stalls]
        quiet_ms = [max((s.get("max_ms", 0) for s in q.values()), default=0) for q in quiet if q]
        if quiet_ms:
            notes.append(f"no hostile call: ≤ {ms(max(quiet_ms))}")
        notes.append(f"hostile calls (auto): {statuses(hostile)}")
        notes.append(_by_bystander(dig(stalls, "auto", key, "bystanders")))
        notes.append(_cpu_note(dig(stalls, "auto", key)))
        rows.append(
            row(
                "a hostile call stalls no front end",
                case.format(**plan) if plan else key,
                f"longest bystander wait ≤ {STALL_MS:.0f} ms",
                "not measured" if auto is None else ms(auto),
                None if auto is None else auto <= STALL_MS,
                "; ".join(notes),
                GROUP,
            )
        )
    kills = dig(results, "probes", "kills") or {}
    auto = dig(kills, "auto", "longest_wait_ms")
    rows.append(
        row(
            "a hostile call stalls no front end",
            f"a Loop of {plan.get('kill_trips', 0):,} trips, {plan.get('hostile_calls', 0)} at "
            "once, two front ends",
            f"longest bystander wait ≤ {STALL_MS:.0f} ms",
            "not measured" if auto is None else ms(auto),
            None if auto is None else auto <= STALL_MS,
            "; ".join(
                note
                for note in [
                    _by_bystander(dig(kills, "auto", "bystanders")),
                    *(
                        f"{m}: {ms(dig(kills, m, 'longest_wait_ms'))} ("
                        + _by_bystander(dig(kills, m, "bystanders"), "")
                        + ")"
                        for m in kills
                        if m != "auto"
                    ),
                    _cpu_note(kills.get("auto")),
                ]
                if note
            ),
            GROUP,
        )
    )
    killed = dig(kills, "auto", "restarts_counted")
    replaced = dig(kills, "auto", "front_ends_replaced")
    rows.append(
        row(
            "no front end killed",
            f"the same Loop, supervisor ping timeout {plan.get('ping_timeout_s', '?')} s",
            "0 front ends restarted",
            "not measured" if killed is None else f"{killed:.0f} restarted ({replaced} replaced)",
            None if killed is None else killed == 0 and replaced == 0,
            "; ".join(
                f"{mode}: {dig(kills, mode, 'restarts_counted') or 0:.0f} restarted, bystanders "
                + statuses(_bystanderstatuses(dig(kills, mode, "bystanders")))
                for mode in kills
            ),
            GROUP,
        )
    )
    return rows


def _by_bystander(
    window: Mapping[str, Any] | None, lead: str = "longest by bystander (auto): "
) -> str:
    """Each bystander's longest wait in a window, e.g. ``/healthz 12 ms`` (a Predict on the
    workers waits for them too, not only for the front end)."""
    waits = [
        f"{name} {ms(f.get('max_ms'))}" for name, f in (window or {}).items() if f.get("calls")
    ]
    return lead + ", ".join(waits) if waits else ""


def _cpu_note(found: Mapping[str, Any] | None) -> str:
    """The front ends' CPU seconds over a hostile window's wall seconds, and the machine's load:
    a front end computing holds its CPU; a starved one gets little."""
    if not found or "front_end_cpu_s" not in found:
        return ""
    return (
        f"front-end CPU {found['front_end_cpu_s']} s over {found['window_s']} s, load average "
        f"{found['load_average']}"
    )


def _bystanderstatuses(window: Mapping[str, Any] | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for figures in (window or {}).values():
        for status, n in figures.get("statuses", {}).items():
            counts[status] = counts.get(status, 0) + n
    return counts


MEMORY_CASES = (
    ("conv", "a Conv model of ~1.4 ms a row (3.5 kB file)"),
    ("external", "a tiny model file with {external_mib} MiB of external weights"),
)
"""Idle memory cases of models a front end should not run: judged against ``never``'s."""
BUDGET_CASES = (("small_mlps", "{mlp_count} small MLPs ({mlp_hidden} wide)"),)
"""Idle memory cases of models a front end may run: judged against ``--inline_budget_mb``."""


def _memory_rows(results: Results) -> list[dict[str, Any]]:
    plan = dig(results, "run", "plan") or {}
    budget = plan.get("inline_budget_mb", 64)
    rows = []
    for key, case in (*MEMORY_CASES, *BUDGET_CASES):
        found = dig(results, "probes", "idle_memory", key) or {}
        auto = dig(found, "auto", "front_end_rss_mb")
        never = dig(found, "never", "front_end_rss_mb")
        measured = bool(auto and never)
        added = max(auto) - max(never) if measured else 0.0
        note = ""
        if measured:
            note = (
                f"per front end, auto {auto}, never {never} MiB; placed in front "
                f"{dig(found, 'auto', 'placed_in_front')} of "
                f"{dig(found, 'auto', 'versions')}; ready in "
                f"{dig(found, 'auto', 'ready_s')} s (never {dig(found, 'never', 'ready_s')} s); "
                f"{size(found.get('model_bytes', 0))} of files"
            )
        if (key, case) in BUDGET_CASES:
            goal = "a front end's runs within --inline_budget_mb"
            target = f"added memory per front end ≤ --inline_budget_mb ({budget} MiB)"
            value = f"+{added:.0f} MiB ({max(auto):.0f} / {max(never):.0f} MiB)" if measured else ""
            met = added <= budget
        else:
            goal = "idle front-end memory for models it does not run"
            target = f"≤ {RSS_RATIO}× --inline_runs=never's"
            ratio = max(auto) / max(never) if measured else 0.0
            value = f"{max(auto):.0f} / {max(never):.0f} MiB = {ratio:.2f}×" if measured else ""
            met = ratio <= RSS_RATIO
        rows.append(
            row(
                goal,
                case.format(**plan) if plan else key,
                target,
                value if measured else "not measured",
                met if measured else None,
                note,
                GROUP,
            )
        )
    return rows


def _placement_rows(results: Results) -> list[dict[str, Any]]:
    plan = dig(results, "run", "plan") or {}
    stalls = dig(results, "probes", "stalls") or {}
    wide = {mode: dig(stalls, mode, "wide_output") for mode in stalls}
    auto, never = wide.get("auto"), wide.get("never")
    rows = [
        row(
            "the workers' output bound applies in front",
            f"an output as wide as the caller's value ({plan.get('wide_bytes', 0) / 1e6:.0f} MB)",
            "answered as with --inline_runs=never",
            "not measured" if not auto else f"{auto['status']} ({auto['answer_bytes']} bytes)",
            None if not (auto and never) else auto["status"] == never["status"],
            "; ".join(
                f"{mode}: {w['status']}, front-end RSS {w['front_end_rss_mb_before']} → peak "
                f"{w['front_end_rss_mb_peak']} → {w['front_end_rss_mb_after']} MiB"
                for mode, w in wide.items()
                if w
            ),
            GROUP,
        )
    ]
    steady = dig(stalls, "auto", "steady")
    met = None
    value = "not measured"
    if steady:
        model = steady["model"]
        before = steady["before"]["placement"].get(model)
        after = steady["after"]["placement"].get(model)
        added = steady["worker_runs_added"]
        value = f"{model}: {before} → {after}; worker runs +{added:.0f}"
        met = before == after and added == 0
        if not before or "frontend" not in before:
            met = None  # nothing in front to move: the load-time measurement placed it out
            value += " (not placed in front at load: nothing to move)"
    control = dig(stalls, "never", "steady", "worker_runs_added")
    rows.append(
        row(
            "ordinary traffic moves no version",
            f"{plan.get('steady_calls')} light calls at {plan.get('steady_rate')} calls/s",
            "placement gauge and worker runs unchanged",
            value,
            met,
            "" if control is None else f"never (control): worker runs +{control:.0f}",
            GROUP,
        )
    )
    return rows


def inline_rows(results: Results) -> list[dict[str, Any]]:
    """The rows of the in-front-end-run probes, in the order of the module doc."""
    return [*_stall_rows(results), *_memory_rows(results), *_placement_rows(results)]
