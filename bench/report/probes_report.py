"""The report of ``python -m bench probes``: ``results.json``, ``README.md``, and the goal rows
(:func:`goal_rows`, one per acceptance line, each from the run's own figures).

Goals: a front end never holds its other callers longer than :data:`STALL_MS` for a hostile
call, is never killed for one, keeps at rest no more than :data:`RSS_RATIO` times the memory of
``--inline_runs=never`` for models it does not run, answers a too-large output as the workers
do, and keeps a light version in place under ordinary traffic; the metrics page carries no
series of a name a caller made up; a token holder is served while every connection slot is held;
unread gRPC answers stay within ``--max_inflight_bytes``; the API documents cost at most
:data:`DOCS_MS` a GET after the first; REST heads are capped and their memory given back; a REST
client that never reads is dropped by the write timeout. ``python -m bench report DIR``
re-renders a directory whose ``results.json`` is of this kind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from bench.report.goal_rows import row
from bench.report.plots import PLOT_DPI

GROUP = "probes"
PLOT = "stalls.png"
"""The report's one plot: :func:`stall_figure`."""
STALL_MS = 100.0
"""The longest a bystander may wait on a front end while hostile calls run (ms)."""
RSS_RATIO = 1.5
"""Idle front-end memory against ``--inline_runs=never``'s, at most."""
DOCS_MS = 1.0
"""A GET of an API document after the first, at most (ms)."""
RETURNED_MB = 8.0
"""Memory a front end may keep after hostile connections closed, at least this slack (MiB)."""
WRITE_SLACK_S = 2.0
"""How long past the write timeout a client that never reads may stay connected (s)."""
IDLE_SLACK_S = 2.0
"""How long past the gRPC idle timeout a token holder may wait for a slot (s)."""
Results = dict[str, Any]


def write(results: Results, out: Path) -> None:
    """``results.json``, ``README.md`` and, when the stall probe ran, :data:`PLOT`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    figure = stall_figure(results)
    if figure is not None:
        figure.savefig(out / PLOT, dpi=PLOT_DPI)
    (out / "README.md").write_text(markdown(results))


STALL_KEYS = ("quiet", "loop", "gram", "failing", "rows")
"""The stall probe's windows: the bystanders alone, then each kind of hostile call."""


def stall_waits(results: Results) -> dict[str, list[float | None]]:
    """Per ``--inline_runs`` mode, the bystanders' longest wait (ms) in each of
    :data:`STALL_KEYS`' windows (None: not measured)."""
    stalls = _get(results, "probes", "stalls") or {}
    waits: dict[str, list[float | None]] = {}
    for mode in stalls:
        found: list[float | None] = []
        for key in STALL_KEYS:
            if key == "quiet":
                window = _get(stalls, mode, "quiet")
                found.append(max((s.get("max_ms", 0) for s in window.values()), default=0)
                             if window else None)  # fmt: skip
            else:
                found.append(_get(stalls, mode, key, "longest_wait_ms"))
        waits[mode] = found
    return waits


def stall_figure(results: Results) -> Figure | None:
    """Bars of :func:`stall_waits` by mode, log scale, the bar at :data:`STALL_MS`; None when
    the stall probe did not run."""
    waits = stall_waits(results)
    if not waits:
        return None
    fig = Figure(figsize=(7.0, 3.6), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(waits)
    for n, (mode, found) in enumerate(waits.items()):
        xs = [i + (n - (len(waits) - 1) / 2) * width for i in range(len(STALL_KEYS))]
        ax.bar(xs, [w or 0 for w in found], width, label=f"--inline_runs={mode}")
    ax.axhline(
        STALL_MS, color="black", linestyle="--", linewidth=1, label=f"the bar, {STALL_MS:.0f} ms"
    )
    ax.set_xticks(range(len(STALL_KEYS)), STALL_KEYS)
    ax.set_yscale("log")
    ax.set_ylabel("bystanders' longest wait (ms)")
    ax.set_title("A front end's other callers while hostile calls run")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    return fig


def rebuild(out: Path) -> None:
    write(json.loads((out / "results.json").read_text()), out)


def _get(tree: Mapping[str, Any], *path: str) -> Any:
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} ms" if value >= 10 else f"{value:.2f} ms"


def _size(nbytes: float) -> str:
    return f"{nbytes / 2**20:.1f} MiB" if nbytes >= 2**20 else f"{nbytes / 1e3:.1f} kB"


def _statuses(counts: Mapping[str, int] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted((counts or {}).items())) or "none"


# -- in-front-end runs ----------------------------------------------------------------------------
STALL_CASES = (
    ("loop", "a Loop whose trip count is the caller's value ({loop_trips:,})"),
    ("gram", "(xᵀx)² over a caller-chosen length L = {gram_length}"),
    ("failing", "{failing_calls} calls failing after their Loop ({failing_trips:,} trips)"),
    ("rows", "{many_rows:,} rows in one call to the lightest model"),
)


def _stall_rows(results: Results) -> list[dict[str, Any]]:
    plan = _get(results, "run", "plan") or {}
    stalls = _get(results, "probes", "stalls") or {}
    rows = []
    for key, case in STALL_CASES:
        found = {mode: _get(stalls, mode, key, "longest_wait_ms") for mode in stalls}
        auto = found.get("auto")
        hostile = _get(stalls, "auto", key, "hostile", "statuses")
        notes = [f"{mode}: {_ms(v)}" for mode, v in found.items() if mode != "auto"]
        quiet = [_get(stalls, m, "quiet") for m in stalls]
        quiet_ms = [max((s.get("max_ms", 0) for s in q.values()), default=0) for q in quiet if q]
        if quiet_ms:
            notes.append(f"no hostile call: ≤ {_ms(max(quiet_ms))}")
        notes.append(f"hostile calls (auto): {_statuses(hostile)}")
        notes.append(_by_bystander(_get(stalls, "auto", key, "bystanders")))
        notes.append(_cpu_note(_get(stalls, "auto", key)))
        rows.append(
            row(
                "a hostile call stalls no front end",
                case.format(**plan) if plan else key,
                f"longest bystander wait ≤ {STALL_MS:.0f} ms",
                "not measured" if auto is None else _ms(auto),
                None if auto is None else auto <= STALL_MS,
                "; ".join(notes),
                GROUP,
            )
        )
    kills = _get(results, "probes", "kills") or {}
    auto = _get(kills, "auto", "longest_wait_ms")
    rows.append(
        row(
            "a hostile call stalls no front end",
            f"a Loop of {plan.get('kill_trips', 0):,} trips, {plan.get('hostile_calls', 0)} at "
            "once, two front ends",
            f"longest bystander wait ≤ {STALL_MS:.0f} ms",
            "not measured" if auto is None else _ms(auto),
            None if auto is None else auto <= STALL_MS,
            "; ".join(
                note
                for note in [
                    *(
                        f"{m}: {_ms(_get(kills, m, 'longest_wait_ms'))}"
                        for m in kills
                        if m != "auto"
                    ),
                    _by_bystander(_get(kills, "auto", "bystanders")),
                    _cpu_note(kills.get("auto")),
                ]
                if note
            ),
            GROUP,
        )
    )
    killed = _get(kills, "auto", "restarts_counted")
    replaced = _get(kills, "auto", "front_ends_replaced")
    rows.append(
        row(
            "no front end killed",
            f"the same Loop, supervisor ping timeout {plan.get('ping_timeout_s', '?')} s",
            "0 front ends restarted",
            "not measured" if killed is None else f"{killed:.0f} restarted ({replaced} replaced)",
            None if killed is None else killed == 0 and replaced == 0,
            "; ".join(
                f"{mode}: {_get(kills, mode, 'restarts_counted') or 0:.0f} restarted, bystanders "
                + _statuses(_bystander_statuses(_get(kills, mode, "bystanders")))
                for mode in kills
            ),
            GROUP,
        )
    )
    return rows


def _by_bystander(window: Mapping[str, Any] | None) -> str:
    """Each bystander's longest wait in a window (auto), e.g. ``/healthz 12 ms``."""
    waits = [
        f"{name} {_ms(f.get('max_ms'))}" for name, f in (window or {}).items() if f.get("calls")
    ]
    return "longest by bystander (auto): " + ", ".join(waits) if waits else ""


def _cpu_note(found: Mapping[str, Any] | None) -> str:
    """The front ends' CPU seconds over a hostile window's wall seconds, and the machine's load:
    a front end computing holds its CPU; a starved one gets little."""
    if not found or "front_end_cpu_s" not in found:
        return ""
    return (
        f"front-end CPU {found['front_end_cpu_s']} s over {found['window_s']} s, load average "
        f"{found['load_average']}"
    )


def _bystander_statuses(window: Mapping[str, Any] | None) -> dict[str, int]:
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
    plan = _get(results, "run", "plan") or {}
    budget = plan.get("inline_budget_mb", 64)
    rows = []
    for key, case in (*MEMORY_CASES, *BUDGET_CASES):
        found = _get(results, "probes", "idle_memory", key) or {}
        auto = _get(found, "auto", "front_end_rss_mb")
        never = _get(found, "never", "front_end_rss_mb")
        measured = bool(auto and never)
        added = max(auto) - max(never) if measured else 0.0
        note = ""
        if measured:
            note = (
                f"per front end, auto {auto}, never {never} MiB; placed in front "
                f"{_get(found, 'auto', 'placed_in_front')} of "
                f"{_get(found, 'auto', 'versions')}; ready in "
                f"{_get(found, 'auto', 'ready_s')} s (never {_get(found, 'never', 'ready_s')} s); "
                f"{_size(found.get('model_bytes', 0))} of files"
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
    plan = _get(results, "run", "plan") or {}
    stalls = _get(results, "probes", "stalls") or {}
    wide = {mode: _get(stalls, mode, "wide_output") for mode in stalls}
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
    steady = _get(stalls, "auto", "steady")
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
    control = _get(stalls, "never", "steady", "worker_runs_added")
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


# -- the rest of the front end --------------------------------------------------------------------
def _front_rows(results: Results) -> list[dict[str, Any]]:
    plan = _get(results, "run", "plan") or {}
    probes = _get(results, "probes") or {}
    rows = []
    names = probes.get("unknown_names")
    rows.append(
        row(
            "no metric series from unknown names",
            f"{plan.get('unknown_calls')} token-less REST calls, random model names",
            "no name on the metrics page",
            "not measured"
            if not names
            else f"{names['names_on_page']} names; page {names['page_bytes_before']} → "
            f"{names['page_bytes_after']} bytes",
            None if not names else names["names_on_page"] == 0,
            ""
            if not names
            else f"answers {_statuses(names['statuses'])}; scrape {names['scrape_ms_before']} → "
            f"{names['scrape_ms_after']} ms; token holder's Predict "
            f"{names['token_predict']['status']} in {names['token_predict']['ms']} ms",
            GROUP,
        )
    )
    rows += _slot_rows(plan, probes.get("held_connections") or {})
    unread = probes.get("unread_answers")
    value, met, note = "not measured", None, ""
    if unread:
        ours, bare = unread["tensorgate"], unread["grpc_aio"]
        budget = unread["max_inflight_mib"]
        unsent_mib = ours["unsent_answers"] * unread["answer_mib"]
        met = unsent_mib <= budget and ours["rss_mb_added"] <= budget
        value = (
            f"{ours['unsent_answers']} unsent ({unsent_mib} MiB), RSS +{ours['rss_mb_added']} MiB"
            f" of a {budget} MiB budget"
        )
        note = (
            f"answers {_statuses(ours['states'])}; RSS {ours['rss_mb_before']} → "
            f"{ours['rss_mb_held']} → {ours['rss_mb_after_close']} MiB after close → "
            f"{ours['rss_mb_second_round_held']} MiB in a second round "
            f"({_statuses(ours['second_round_states'])}); bare "
            f"grpc.aio: {bare['unsent_answers']} unsent, +{bare['rss_mb_added']} MiB "
            f"({bare['mb_per_unsent_answer']} MiB each)"
        )
        never = unread.get("tensorgate_never")
        if never:
            note += (
                f"; --inline_runs=never: {never['unsent_answers']} unsent, RSS "
                f"+{never['rss_mb_added']} MiB (peak {never['rss_mb_peak']} MiB)"
            )
    rows.append(
        row(
            "unread gRPC answers stay within --max_inflight_bytes",
            f"a client whose window never opens, {plan.get('unread_calls')} Predicts of "
            f"{plan.get('answer_mib')} MiB answers, --max_concurrent_requests=50",
            "unsent answers and RSS growth ≤ the budget",
            value,
            met,
            note,
            GROUP,
        )
    )
    rows += _http_rows(plan, probes)
    return rows


SLOT_GOAL = "a token holder is served while every connection slot is held"


def _tries(found: Mapping[str, Any]) -> str:
    return f"served {found['served']}/{found['tries']} ({_statuses(found['statuses'])})"


def _slot_rows(plan: Mapping[str, Any], held: Mapping[str, Any]) -> list[dict[str, Any]]:
    """REST: every try served while the slots are held. gRPC: grpcio refuses a connection past
    its cap and cannot close an idle one instead, so holders that call again keep the slots
    (a row of what was seen); holders that do not are closed by the idle timeout, after which
    the token holder must be served."""
    rest, grpc_held = held.get("rest"), held.get("grpc")
    passive = held.get("grpc_short_idle_passive")
    reopening = held.get("grpc_short_idle_reopening")
    idle_s = (passive or reopening or {}).get("idle_timeout_s", plan.get("short_idle_s"))
    rows = [
        row(
            SLOT_GOAL,
            f"REST: {plan.get('idle_connections')} unauthenticated keep-alive connections "
            "polling /healthz",
            "every try served",
            "not measured" if not rest else _tries(rest),
            None if not rest else rest["served"] == rest["tries"],
            "" if not rest else f"held {rest['held']}, reopened {rest['holders_reopened']}",
            GROUP,
        ),
        row(
            SLOT_GOAL,
            f"gRPC: {plan.get('watch_connections')} connections each holding a health Watch, "
            "calling again when it ends",
            "observed (grpcio refuses a connection past --grpc_max_connections; it cannot "
            "close an idle one instead)",
            "not measured"
            if not grpc_held
            else f"{_tries(grpc_held)}; holding {grpc_held['watching']}",
            None,
            ""
            if not reopening
            else f"with --grpc_idle_timeout_seconds={idle_s}: {_tries(reopening)}, "
            f"{reopening['watches_ended']} watches ended and called again",
            GROUP,
        ),
        row(
            SLOT_GOAL,
            f"gRPC: the same Watch holders not calling again, --grpc_idle_timeout_seconds={idle_s}",
            "served within 2 × the idle timeout of the holders' opening (the Watch ends, then "
            f"the idle connection is closed) + {IDLE_SLACK_S:g} s",
            "not measured"
            if not passive
            else f"first served {passive.get('first_served_after_open_s')} s after the holders "
            f"began to open; {_tries(passive)}",
            None if not passive else _served_in_time(passive),
            "" if not passive else f"{passive['watches_ended']} watches ended by the server",
            GROUP,
        ),
    ]
    return rows


def _served_in_time(found: Mapping[str, Any]) -> bool:
    """Whether a token holder was first served within twice the idle timeout (plus
    :data:`IDLE_SLACK_S`) of the Watch holders' opening."""
    served = found.get("first_served_after_open_s")
    return served is not None and served <= 2 * found["idle_timeout_s"] + IDLE_SLACK_S


def _http_rows(plan: Mapping[str, Any], probes: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    docs = probes.get("api_docs")
    rows.append(
        row(
            "API documents cost little after the first GET",
            f"--enable_api_docs, {plan.get('docs_models')} models"
            + (f" ({docs['document_bytes']} bytes)" if docs else ""),
            f"median GET ≤ {DOCS_MS:g} ms",
            "not measured" if not docs else f"{docs['get']['median_ms']} ms",
            None if not docs else docs["get"]["median_ms"] <= DOCS_MS,
            ""
            if not docs
            else f"first {docs['first_ms']} ms; GET p90 {docs['get']['p90_ms']}, max "
            f"{docs['get']['max_ms']} ms; HEAD median {docs['head']['median_ms']} ms; Predicts "
            f"{docs['predicts_per_s_alone']}/s alone, {docs['predicts_per_s_beside_4_fetchers']}"
            "/s beside 4 fetchers",
            GROUP,
        )
    )
    heads = probes.get("large_heads")
    value, met, note = "not measured", None, ""
    if heads:
        full, under = heads["full_lines"], heads["under_cap"]
        kept = [r["rss_mb_after"] - r["rss_mb_idle"] for r in (full, under)]
        slack = max(RETURNED_MB, 0.1 * full["rss_mb_idle"])
        refused = sum(n for status, n in full["answers"].items() if status != "open")
        met = refused == heads["connections"] and max(kept) <= slack
        value = (
            f"{refused}/{heads['connections']} refused ({_statuses(full['answers'])}); kept "
            f"+{max(kept):.1f} MiB after"
        )
        note = "; ".join(
            f"{name}: {r['head_bytes_each']} B each, {_statuses(r['answers'])}, RSS "
            f"{r['rss_mb_idle']} → {r['rss_mb_held']} (peak {r.get('rss_mb_peak', '?')}) → "
            f"{r['rss_mb_after']} MiB"
            for name, r in (("1 MiB heads", full), ("heads under the cap", under))
        )
    rows.append(
        row(
            "REST header bytes capped, memory given back",
            f"{plan.get('head_connections')} connections parking unfinished heads",
            f"every 1 MiB head refused; ≤ {RETURNED_MB:g} MiB (or 10 %) kept after",
            value,
            met,
            note,
            GROUP,
        )
    )
    unread = probes.get("unread_rest")
    dropped = _get(unread or {}, "dropped_after_s")
    limit = _get(unread or {}, "write_timeout_s")
    rows.append(
        row(
            "a REST client that never reads is dropped",
            "pipelined Predicts of MB answers, never read; "
            f"--rest_api_write_timeout_seconds={plan.get('write_timeout_s')}",
            f"dropped within the write timeout + {WRITE_SLACK_S:g} s",
            "not measured"
            if not unread
            else "not dropped"
            if dropped is None
            else f"dropped after {dropped} s",
            None if not unread else dropped is not None and dropped <= limit + WRITE_SLACK_S,
            ""
            if not unread
            else f"RSS {unread['rss_mb_idle']} → {unread['rss_mb_held']} → "
            f"{unread['rss_mb_after']} MiB",
            GROUP,
        )
    )
    return rows


def goal_rows(results: Results) -> list[dict[str, Any]]:
    """One row per acceptance line, in the order of the module doc."""
    return [
        *_stall_rows(results),
        *_memory_rows(results),
        *_placement_rows(results),
        *_front_rows(results),
    ]


def met_word(goal: Mapping[str, Any]) -> str:
    """A row's verdict: ``met``, ``not met``, ``observed`` (a behaviour reported, no bar) or
    ``n/a`` (not measured)."""
    if goal["met"] is None:
        return "n/a" if goal["value"] == "not measured" else "observed"
    return "met" if goal["met"] else "not met"


def _met(goal: Mapping[str, Any]) -> str:
    word = met_word(goal)
    return f"**{word}**" if word == "not met" else word


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(results: Results) -> str:
    run = results["run"]
    machine = run.get("machine", {})
    lines = [
        f"# Hostile-caller probes — {run['id']}",
        "",
        f"`python -m bench probes` on {machine.get('cpu_model') or 'this machine'} "
        f"({machine.get('cpus', '?')} CPUs), {run.get('elapsed_s', 0):.0f} s. Each probe ran "
        "against gateways started for it on 127.0.0.1; `auto` is `--inline_runs`' default, "
        "`never` the baseline in the same conditions, `always` every ONNX version placed in "
        "front (the wall-clock watch). Latencies are wall clock on this machine, as measured.",
        "",
        "| goal | case | target | value | met | note |",
        "|---|---|---|---|---|---|",
    ]
    for goal in goal_rows(results):
        lines.append(
            f"| {_cell(goal['goal'])} | {_cell(goal['case'])} | {_cell(goal['target'])} | "
            f"{_cell(goal['value'])} | {_met(goal)} | {_cell(goal['note'])} |"
        )
    failed = results.get("failed") or {}
    if failed:
        lines += ["", "## Probes that did not finish", ""]
        lines += [f"- `{name}`: {_cell(why)}" for name, why in failed.items()]
    stalls = _get(results, "probes", "stalls") or {}
    if stalls:
        lines += [
            "",
            "## Bystanders' longest waits (ms) by mode",
            "",
            "| hostile calls | " + " | ".join(stalls) + " |",
            "|---|" + "---|" * len(stalls),
        ]
        waits = stall_waits(results)
        for i, key in enumerate(STALL_KEYS):
            lines.append(f"| {key} | " + " | ".join(_ms(waits[m][i]) for m in stalls) + " |")
        lines += ["", f"![bystanders' longest waits by mode]({PLOT})"]
        lines += ["", "Where each version ran after the probes (front ends in front / workers):"]
        for mode in stalls:
            lines.append(f"- {mode}: {_cell(_get(stalls, mode, 'placed_after'))}")
    lines += ["", "All figures: `results.json`."]
    return "\n".join(lines) + "\n"
