"""The goal rows of the rest of the front end in ``python -m bench probes``: the metrics page
carries no series of a name a caller made up; a token holder is served while every connection
slot is held; unread gRPC answers stay within ``--max_inflight_bytes``; the API documents cost
at most :data:`DOCS_MS` a GET after the first; REST heads are capped and their memory given
back; a REST client that never reads is dropped by the write timeout. Each row is judged from
the run's own figures (``results["probes"]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report.goal_rows import row
from bench.report.inline_probe_goals import GROUP
from bench.report.probe_text import dig, statuses

DOCS_MS = 1.0
"""A GET of an API document after the first, at most (ms)."""
RETURNED_MB = 8.0
"""Memory a front end may keep after hostile connections closed, at least this slack (MiB)."""
WRITE_SLACK_S = 2.0
"""How long past the write timeout a client that never reads may stay connected (s)."""
IDLE_SLACK_S = 2.0
"""How long past the gRPC idle timeout a token holder may wait for a slot (s)."""
Results = dict[str, Any]


def front_rows(results: Results) -> list[dict[str, Any]]:
    plan = dig(results, "run", "plan") or {}
    probes = dig(results, "probes") or {}
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
            else f"answers {statuses(names['statuses'])}; scrape {names['scrape_ms_before']} → "
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
            f"answers {statuses(ours['states'])}; RSS {ours['rss_mb_before']} → "
            f"{ours['rss_mb_held']} → {ours['rss_mb_after_close']} MiB after close → "
            f"{ours['rss_mb_second_round_held']} MiB in a second round "
            f"({statuses(ours['second_round_states'])}); bare "
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
    return f"served {found['served']}/{found['tries']} ({statuses(found['statuses'])})"


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
            f"{refused}/{heads['connections']} refused ({statuses(full['answers'])}); kept "
            f"+{max(kept):.1f} MiB after"
        )
        note = "; ".join(
            f"{name}: {r['head_bytes_each']} B each, {statuses(r['answers'])}, RSS "
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
    dropped = dig(unread or {}, "dropped_after_s")
    limit = dig(unread or {}, "write_timeout_s")
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
