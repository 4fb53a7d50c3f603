"""bench.report.probes_report: one goal row per hostile caller, each judged from the run's own
figures, and the report rebuilt from results.json."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from bench.cli import rebuild_report
from bench.report.probe_text import dig, met_word, ms, size, statuses
from bench.report.probes_report import goal_rows, markdown, stall_figure, stall_waits
from bench.scenarios.probes_plan import ProbesPlan


def _window(longest: float) -> dict[str, Any]:
    figures = {"calls": 5, "statuses": {"OK": 5}, "median_ms": 1.0, "p99_ms": longest}
    return {"GetModelStatus": {**figures, "max_ms": longest}, "/healthz": {**figures, "max_ms": 1}}


def _stall(longest: float) -> dict[str, Any]:
    return {
        "hostile": {"calls": 3, "statuses": {"OK": 3}},
        "bystanders": _window(longest),
        "longest_wait_ms": longest,
    }


def _stalls(longest: float, status: int, worker_runs: float) -> dict[str, Any]:
    placed = {"mlp": {"frontend": 1}, "looped": {"workers": 1}}
    wide = {"status": status, "answer_bytes": 88, "front_end_rss_mb_before": 100.0,
            "front_end_rss_mb_peak": 101.0, "front_end_rss_mb_after": 100.0}  # fmt: skip
    return {
        "quiet": _window(3.0),
        **{key: _stall(longest) for key in ("loop", "gram", "failing", "rows")},
        "steady": {
            "model": "mlp",
            "before": {"placement": placed, "worker_runs": 10.0},
            "after": {"placement": placed, "worker_runs": 10.0 + worker_runs},
            "worker_runs_added": worker_runs,
        },
        "wide_output": wide,
        "placed_after": placed,
    }


def _memory(auto: float, never: float) -> dict[str, Any]:
    def mode(rss: float) -> dict[str, Any]:
        return {"front_end_rss_mb": [rss, rss], "placed_in_front": 0, "versions": 1, "ready_s": 2}

    return {"auto": mode(auto), "never": mode(never), "model_bytes": 3500}


def _tries(served: int) -> dict[str, Any]:
    return {"tries": 12, "served": served, "statuses": {"200": served}, "first_served_s": 0.0}


def results() -> dict[str, Any]:
    """A run whose every goal is met."""
    unread = {"unsent_answers": 15, "rss_mb_added": 60.0, "states": {"held": 15},
              "rss_mb_before": 100, "rss_mb_held": 160, "rss_mb_after_close": 100,
              "rss_mb_second_round_held": 160, "second_round_states": {"held": 15},
              "mb_per_unsent_answer": 4.0, "rss_mb_peak": 165}  # fmt: skip
    heads = {"head_bytes_each": 1, "answers": {"431": 1000}, "rss_mb_idle": 100.0,
             "rss_mb_held": 101.0, "rss_mb_after": 100.5}  # fmt: skip
    kill = {**_stall(20.0), "restarts_counted": 0.0, "front_ends_replaced": 0}
    idle = {"watching": 1024, "idle_timeout_s": 3.0, "watches_ended": 1024}
    return {
        "kind": "probes",
        "run": {
            "id": "test-probes",
            "plan": vars(ProbesPlan()) | {"modes": ["auto", "never"]},
            "machine": {"cpus": 2},
            "elapsed_s": 600,
        },
        "probes": {
            "stalls": {"auto": _stalls(20.0, 429, 0.0), "never": _stalls(30.0, 429, 300.0)},
            "kills": {"auto": kill, "never": kill},
            "idle_memory": {
                "conv": _memory(90, 80),
                "external": _memory(80, 80),
                "small_mlps": _memory(110, 80),
            },
            "unknown_names": {
                "calls": 20000,
                "statuses": {"401": 20000},
                "names_on_page": 0,
                "page_bytes_before": 4000,
                "page_bytes_after": 7000,
                "scrape_ms_before": 2,
                "scrape_ms_after": 2,
                "token_predict": {"status": 200, "ms": 2},
            },
            "held_connections": {
                "rest": {**_tries(12), "held": 1024, "holders_reopened": 12},
                "grpc": {**_tries(0), "watching": 1024},
                "grpc_short_idle_reopening": {**idle, **_tries(0)},
                "grpc_short_idle_passive": {
                    **idle,
                    **_tries(9),
                    "first_served_s": 4.0,
                    "first_served_after_open_s": 6.5,
                },
            },
            "unread_answers": {
                "answer_mib": 4,
                "max_inflight_mib": 64,
                "tensorgate": unread,
                "tensorgate_never": unread,
                "grpc_aio": unread,
            },
            "api_docs": {
                "models": 200,
                "document_bytes": 680000,
                "first_ms": 15.0,
                "get": {"median_ms": 0.4, "p90_ms": 0.5, "max_ms": 0.9},
                "head": {"median_ms": 0.1},
                "predicts_per_s_alone": 1000,
                "predicts_per_s_beside_4_fetchers": 900,
            },
            "large_heads": {"connections": 1000, "full_lines": heads, "under_cap": heads},
            "unread_rest": {
                "write_timeout_s": 5.0,
                "dropped_after_s": 5.6,
                "rss_mb_idle": 100,
                "rss_mb_held": 110,
                "rss_mb_after": 100,
            },
        },
        "failed": {},
    }


def test_every_goal_has_a_row_and_a_met_run_meets_them_all() -> None:
    rows = goal_rows(results())
    goals = [r["goal"] for r in rows]
    assert goals.count("a hostile call stalls no front end") == 5
    assert goals.count("idle front-end memory for models it does not run") == 2
    assert goals.count("a token holder is served while every connection slot is held") == 3
    for goal in (
        "no front end killed",
        "a front end's runs within --inline_budget_mb",
        "the workers' output bound applies in front",
        "ordinary traffic moves no version",
        "no metric series from unknown names",
        "unread gRPC answers stay within --max_inflight_bytes",
        "API documents cost little after the first GET",
        "REST header bytes capped, memory given back",
        "a REST client that never reads is dropped",
    ):
        assert goals.count(goal) == 1, goal
    observed = [r for r in rows if r["met"] is not True]
    assert [met_word(r) for r in observed] == ["observed"]  # grpcio cannot evict: reported
    assert "calling again" in observed[0]["case"] and "served 0/12" in observed[0]["value"]


def _misses(changed: dict[str, Any]) -> list[str]:
    return [f"{r['goal']}: {r['case']}" for r in goal_rows(changed) if r["met"] is False]


def test_each_goal_is_judged_from_its_own_figures() -> None:
    base = results()
    probes = base["probes"]
    cases = [
        (("stalls", "auto", "gram", "longest_wait_ms"), 180.0, "(xᵀx)²"),
        (("kills", "auto", "restarts_counted"), 1.0, "no front end killed"),
        (("idle_memory", "conv", "auto", "front_end_rss_mb"), [130, 125], "Conv"),
        (("idle_memory", "small_mlps", "auto", "front_end_rss_mb"), [150, 145], "small MLPs"),
        (("stalls", "auto", "wide_output", "status"), 200, "output bound"),
        (("stalls", "auto", "steady", "worker_runs_added"), 40.0, "ordinary traffic"),
        (("unknown_names", "names_on_page"), 3, "unknown names"),
        (("held_connections", "rest", "served"), 11, "REST"),
        (
            ("held_connections", "grpc_short_idle_passive", "first_served_after_open_s"),
            8.5,
            "not calling",
        ),
        (
            ("held_connections", "grpc_short_idle_passive", "first_served_after_open_s"),
            None,
            "not calling",
        ),
        (("unread_answers", "tensorgate", "rss_mb_added"), 190.0, "unread gRPC"),
        (("api_docs", "get", "median_ms"), 13.0, "API documents"),
        (("large_heads", "full_lines", "answers"), {"open": 1000}, "header bytes"),
        (("unread_rest", "dropped_after_s"), None, "never reads"),
    ]
    for path, value, word in cases:
        changed = copy.deepcopy(base)
        node = changed["probes"]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        misses = _misses(changed)
        assert len(misses) == 1 and word in misses[0], (path, misses)
    assert probes == results()["probes"]  # the cases changed copies


def test_a_light_version_placed_out_at_load_leaves_ordinary_traffic_unjudged() -> None:
    placed_out = results()
    steady = placed_out["probes"]["stalls"]["auto"]["steady"]
    for side in ("before", "after"):
        steady[side]["placement"] = {"mlp": {"workers": 1}}
    steady["worker_runs_added"] = 300.0
    (traffic,) = [r for r in goal_rows(placed_out) if r["goal"].startswith("ordinary traffic")]
    assert met_word(traffic) == "observed" and "nothing to move" in traffic["value"]


def test_a_probe_not_run_is_not_measured_and_the_report_says_which_failed() -> None:
    partial = results()
    del partial["probes"]["kills"]
    partial["failed"] = {"kills": "StartFailed: kills-auto did not become ready"}
    rows = {(r["goal"], r["case"]): r for r in goal_rows(partial)}
    killed = next(r for (goal, _), r in rows.items() if goal == "no front end killed")
    assert killed["met"] is None and killed["value"] == "not measured"
    assert met_word(killed) == "n/a"
    stalled = [r for (goal, case), r in rows.items() if "16,000,000 trips" in case]
    assert [met_word(r) for r in stalled] == ["n/a"]
    text = markdown(partial)
    assert "## Probes that did not finish" in text and "kills-auto did not become ready" in text
    assert "| quiet | 3.00 ms | 3.00 ms |" in text


def test_the_cli_rebuilds_a_probes_directory(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps(results()))
    rebuild_report(tmp_path)
    text = (tmp_path / "README.md").read_text()
    assert text.startswith("# Hostile-caller probes — test-probes")
    assert text.count("| met |") == len(goal_rows(results()))  # the header, every row but one
    assert text.count("| observed |") == 1
    assert (tmp_path / "stalls.png").stat().st_size > 1000 and "(stalls.png)" in text


def test_the_stall_waits_are_read_per_mode_and_window() -> None:
    waits = stall_waits(results())
    assert waits == {"auto": [3.0, 20.0, 20.0, 20.0, 20.0], "never": [3.0, 30.0, 30.0, 30.0, 30.0]}
    partial = results()
    del partial["probes"]["stalls"]["never"]["gram"]
    assert stall_waits(partial)["never"][2] is None
    del partial["probes"]["stalls"]
    assert stall_waits(partial) == {} and stall_figure(partial) is None


def test_figures_are_read_and_written_plainly() -> None:
    tree = {"a": {"b": {"c": 3}}, "n": None}
    assert dig(tree, "a", "b", "c") == 3
    assert dig(tree, "a", "x", "c") is None and dig(tree, "n", "c") is None
    assert [ms(None), ms(8.5), ms(123.4)] == ["—", "8.50 ms", "123 ms"]
    assert [size(3500), size(3 * 2**20)] == ["3.5 kB", "3.0 MiB"]
    assert statuses({"503": 3, "200": 12}) == "200 12, 503 3" and statuses(None) == "none"
