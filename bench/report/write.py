"""Write a run's report: ``results.json``, ``README.md`` (summary tables) and PNG plots.

``python -m bench report DIR`` rebuilds the Markdown and the plots from ``DIR/results.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.measure import accuracy
from bench.report import seeds_report
from bench.report.calls_table import calls_section
from bench.report.goal_rows import GROUPS, percent_spread
from bench.report.goals import compute
from bench.report.plots import write_plots
from bench.report.tables import (
    batching_tables,
    cell,
    per_request_table,
    roles_table,
    sweep_table,
    system_table,
)


def markdown(results: dict[str, Any], plots: list[str]) -> str:
    run, sc = results["run"], results["scenarios"]
    m = run["machine"]
    lines = [
        f"# tensorgate benchmark — {run['id']}",
        "",
        f"{run['date']} · plan `{run['plan']['name']}` · {m['cpus']} CPUs ({m['cpu_model']}) · "
        f"Python {m['python']} · {', '.join(f'{k} {v}' for k, v in m['versions'].items())} · "
        f"h2load: {m['h2load'] or 'not installed'} · took {run.get('elapsed_s', 0):.0f} s",
        "",
        "Every number below was measured in this one run on this machine: systems alternate in "
        f"rounds (A B C … A B C …), {run['plan']['repeats']} repeats per point, median with "
        "min–max. *1-core*: every server process pinned to one CPU, the load generator to the "
        "other. *2-core*: nothing pinned (the client shares the cores; its CPU is recorded). "
        "Server CPU is the whole process tree's; µs/req is CPU per request.",
        "",
    ]
    if results.get("goals"):
        lines += [
            "Goals: ratios are of medians, with the range the repeats allow (worst against best "
            "and back); n/a: not measured in this run, or reported without a bar.",
            "",
        ]
    for group, title in GROUPS.items():
        lines += _goal_table(f"Goals: {title}", results.get("goals", []), group)
    peers = run.get("peer_venvs", {})
    if peers:
        lines += ["", "Peers: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in peers.items())]
    if results.get("unavailable"):
        lines += ["", "## Not available in this run", ""]
        lines += [f"- `{k}`: {v}" for k, v in results["unavailable"].items()]
    for key in ("batching", "tracing"):
        s = sc.get(key, {})
        if s and not s.get("available", True):
            lines.append(f"- {key} on/off: not available — {s.get('reason', s.get('error', ''))}")
    lim = sc.get("limits", {})
    if lim and "mlp_model_us" in lim:
        lines += [
            "",
            "## Model times (raw ONNX Runtime, one thread, in-process)",
            "",
            f"MLP: batch 1 {lim['mlp_model_us']:.1f} µs, batch 64 "
            f"{lim['mlp_model_us_batch64']:.1f} µs. ResNet50: batch 1 "
            f"{lim['resnet50_model_ms']:.1f} ms.",
        ]
        if lim.get("mlp_model_us_by_batch"):
            times = ", ".join(f"{b}: {us:.1f}" for b, us in lim["mlp_model_us_by_batch"].items())
            lines += ["", f"MLP, µs of one run by batch size: {times}."]
    tiny = sc.get("tiny", {})
    if "saturation" in tiny:
        lines += [
            "",
            f"## Tiny MLP, 1 server core, concurrency {run['plan']['saturation_concurrency']}"
            f" ({tiny['driver']})",
            "",
        ]
        lines += system_table(tiny["saturation"])
        lines += _per_request(tiny["saturation"])
        lines += ["", "### Light load (concurrency 1)", ""]
        lines += system_table(tiny.get("light", {}))
        if "sweep.png" in plots:
            lines += ["", "### Concurrency sweep", "", "![sweep](sweep.png)", ""]
            lines += sweep_table(tiny.get("sweep", {}))
    two = sc.get("tiny-2core", {})
    if "saturation" in two:
        lines += ["", "## Tiny MLP, 2 cores (server workers = 2; client shares the cores)", ""]
        lines += system_table(two["saturation"])
        lines += _per_request(two["saturation"])
        if two.get("one_connection"):
            lines += ["", "### Every call on one connection (same rounds)", ""]
            lines += system_table(two["one_connection"])
            lines += _per_request(two["one_connection"])
    res = sc.get("resnet50", {})
    if "runs" in res:
        lines += [
            "",
            f"## ResNet50 (224×224×3 float32), concurrency {res['concurrency']}",
            "",
            "Raw runtime configurations and servers alternate in the same rounds. `1-core:` rows "
            "are pinned to one server CPU (client on the other); the rest use both cores.",
            "",
        ]
        lines += system_table(res["runs"])
        lines += _per_request(res["runs"])
    if "openvino-accuracy" in sc:
        lines += ["", "## ResNet50 outputs on OpenVINO (untimed)", ""]
        lines += accuracy.table(sc["openvino-accuracy"])
    over = sc.get("overload", {})
    if any(isinstance(c, dict) and c.get("points") for c in over.values()):
        lines += ["", f"## Overload (open loop, deadline {over.get('timeout_s', 0):g} s)", ""]
        if "overload.png" in plots:
            lines += ["![overload](overload.png)", ""]
        for model, case in over.items():
            if not isinstance(case, dict) or not case.get("points"):
                continue
            lines += [
                f"**{model}** on {case['system']} ({case['layout']}); capacity (closed loop) "
                f"{case['capacity_rps']:.1f} req/s",
                "",
                "| offered × capacity | goodput req/s | p50 ms | p99 ms | statuses | "
                "client send lag p99 ms |",
                "|---|---|---|---|---|---|",
            ]
            for f, s in sorted(case["points"].items(), key=lambda kv: float(kv[0])):
                st = ", ".join(f"{k} {v}" for k, v in sorted(s.get("statuses", {}).items()))
                lines.append(
                    f"| {f} | {cell(s, 'goodput', '{:.1f}')} | "
                    f"{cell(s, 'p50_ms', '{:.1f}')} | {cell(s, 'p99_ms', '{:.1f}')} | "
                    f"{st} | {cell(s, 'send_lag_p99_ms', '{:.1f}')} |"
                )
            lines.append("")
            top = case["points"].get(max(case["points"], key=float), {})
            if top.get("error_messages"):
                lines += ["Most frequent errors at the highest rate:", ""]
                lines += [f"- {n} × `{m[:200]}`" for m, n in top["error_messages"].items()]
                lines.append("")
    ramp = sc.get("ramp", {})
    if ramp.get("systems"):
        lines += [
            "",
            f"## Ramp ({ramp['model']}, {ramp['layout']}): one user every "
            f"{ramp['step_s']:g} s up to {ramp['users']}, then {ramp['plateau_s']:g} s plateau",
            "",
            "Each system runs once (a time series cannot interleave).",
            "",
        ]
        if "ramp.png" in plots:
            lines += ["![ramp](ramp.png)", ""]
        lines += system_table(ramp["systems"])
    lines += seeds_report.markdown(sc.get("seeds", {}), "seeds.png" in plots)
    batching = sc.get("batching", {})
    if batching.get("available"):
        lines += batching_tables(batching)
    tracing = sc.get("tracing", {})
    for sub, title in (("mlp", "saturating"), ("mlp@1", "concurrency 1")):
        if tracing.get("available") and sub in tracing:
            lines += ["", f"## Tracing on/off (MLP, 1 core, {title})", ""]
            lines += system_table(tracing[sub])
    side = tracing.get("side_by_side")
    if tracing.get("available") and side:
        title = "Tracing side by side (MLP, 1 core, all served at once, fresh processes each round)"
        lines += ["", f"## {title}", ""]
        lines += ["| system | CPU µs / request | cost against off |", "|---|---|---|"]
        for key, cpu in side["cpu_us_per_request"].items():
            cost = side["cost"].get(key)
            spread = percent_spread(cost) if cost else ""
            lines.append(
                f"| {key} | {cpu['median']:.0f} ({cpu['min']:.0f}–{cpu['max']:.0f}) | {spread} |"
            )
        lines += roles_table(side.get("roles_us_per_request", {}))
    rss = sc.get("idle-rss", {})
    if "idle_mb" in rss:
        lines += [
            "",
            "## Memory",
            "",
            f"Gateway process RSS serving the demo model: {rss['at_ready_mb']:.1f} MB when "
            f"ready, {rss['idle_mb']:.1f} MB idle, {rss['after_2000_requests_mb']:.1f} MB "
            f"after 2000 requests; workers {', '.join(f'{w:.1f}' for w in rss['workers_mb'])}"
            " MB each.",
        ]
        lines += _front_end_memory(rss.get("front_ends", {}))
    prof = {k: v for k, v in sc.get("profile", {}).items() if isinstance(v, dict) and "file" in v}
    if prof:
        lines += [
            "",
            "## Where the CPU goes (MLP, 1 server core, h2load concurrency 64)",
            "",
            "CPU µs per request by thread, from /proc over the profiled load; Python frames by "
            "py-spy in " + ", ".join(f"[{v['file']}]({v['file']})" for v in prof.values()) + ".",
            "",
            "| system | process | thread | CPU µs / request |",
            "|---|---|---|---|",
        ]
        for system, v in prof.items():
            for row in v["cpu_us_per_request"]:
                lines.append(
                    f"| {system} | {row['process']} | {row['thread']} | "
                    f"{row['cpu_us_per_request']:.0f} |"
                )
            total = sum(r["cpu_us_per_request"] for r in v["cpu_us_per_request"])
            lines.append(f"| {system} | **total** | | **{total:.0f}** |")
    lines += calls_section(sc.get("calls", {}))
    lines += _reliability_sections(sc.get("soak", {}), sc.get("chaos", {}))
    failed = {k: v["error"] for k, v in sc.items() if isinstance(v, dict) and "error" in v}
    if failed:
        lines += ["", "## Scenarios that failed", ""]
        lines += [f"- {k}: {v}" for k, v in failed.items()]
    return "\n".join(lines) + "\n"


def _front_end_memory(section: dict[str, Any]) -> list[str]:
    """Idle memory of the process tree by ``--frontends`` (one worker)."""
    trees = section.get("trees", {})
    if not trees:
        return []
    lines = [
        "",
        "Idle memory of the whole process tree (demo model, one worker) by `--frontends` "
        "(RSS counts shared libraries in each process; PSS shares them out):",
        "",
        "| --frontends | tree RSS MB | tree PSS MB | RSS MB by process |",
        "|---|---|---|---|",
    ]
    for count, tree in trees.items():
        each = ", ".join(f"{tree['roles'][pid]} {mb:.1f}" for pid, mb in tree["rss_mb"].items())
        lines.append(
            f"| {count} | {tree['tree_rss_mb']:.1f} | {tree['tree_pss_mb']:.1f} | {each} |"
        )
    return lines


def _per_request(saturation: dict[str, Any]) -> list[str]:
    table = per_request_table(saturation)
    if not table:
        return []
    intro = (
        "tensorgate's own counters per request (its Prometheus page scraped around each point; a "
        "wake-up is one submit doorbell, rows/run the mean batch size; runs/request by round: "
        "every round in order, — where a round counted none):"
    )
    return ["", "### Per request (tensorgate)", "", intro, "", *table]


def _goal_table(title: str, goals: list[dict[str, Any]], group: str) -> list[str]:
    rows = [g for g in goals if g.get("group") == group]
    if not rows:
        return []
    lines = [
        f"## {title}",
        "",
        "| goal | case | target | this run | met | notes |",
        "|---|---|---|---|---|---|",
    ]
    for g in rows:
        met = {True: "yes", False: "**no**", None: "n/a"}[g["met"]]
        lines.append(
            f"| {g['goal']} | {g.get('case', '')} | {g['target']} | {g['value']} | {met} | "
            f"{g['note']} |"
        )
    return [*lines, ""]


def _reliability_sections(soak: dict[str, Any], chaos: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if "samples" in soak:
        flat = soak.get("flatness", {})
        lines += [
            "",
            f"## Soak ({soak['duration_s'] / 60:.1f} min, MLP, open loop at {soak['rps']:.0f} "
            "req/s)",
            "",
            f"Statuses: {soak['result'].get('statuses', {})}; p99 "
            f"{soak['result'].get('p99_ms', 0):.1f} ms. RSS and fds, start after warm-up → end "
            "(medians of the 2nd and last tenth of the samples):",
            "",
            "| series | start | end | growth |",
            "|---|---|---|---|",
        ]
        for name, v in flat.items():
            if isinstance(v, dict) and "growth" in v:
                lines.append(
                    f"| {name} | {v['start']:.1f} | {v['end']:.1f} | {v['growth'] * 100:+.1f} % |"
                )
        if "fds" in flat:
            lines.append(
                f"| fds (gateway and front ends) | {flat['fds']['start']:.0f} | "
                f"{flat['fds']['end']:.0f} | |"
            )
    if "result" in chaos:
        result = chaos["result"]
        lines += [
            "",
            f"## Chaos (a worker of two SIGKILLed every {chaos['kill_every_s']:.0f} s, "
            f"{chaos['duration_s']:.0f} s at {chaos['rps']:.0f} req/s)",
            "",
            f"{len(chaos.get('kills', []))} kills; goodput {result.get('goodput', 0):.1f} req/s "
            f"({chaos['goodput_ratio']:.2f}× offered); statuses {result.get('statuses', {})}; "
            f"p99 of OK {result.get('p99_ms', 0):.1f} ms.",
        ]
        for message, count in list(result.get("error_messages", {}).items())[:5]:
            lines.append(f"- {count} × `{message[:160]}`")
    return lines


def write(results: dict[str, Any], out: Path) -> None:
    """Compute the goals, then write ``results.json``, the plots and ``README.md`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    results["goals"] = compute(results)
    (out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")
    plots = write_plots(results, out)
    (out / "README.md").write_text(markdown(results, plots))


def rebuild(out: Path) -> None:
    """Re-render ``out`` from its ``results.json``."""
    write(json.loads((out / "results.json").read_text()), out)
