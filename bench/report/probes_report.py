"""The report of ``python -m bench probes``: ``results.json``, ``README.md`` (the goal rows
first: :func:`goal_rows`, from :mod:`~bench.report.inline_probe_goals` and
:mod:`~bench.report.front_probe_goals`) and :data:`PLOT`, the bystanders' longest waits by mode.
``python -m bench report DIR`` re-renders a directory whose ``results.json`` is of this kind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from bench.report.front_probe_goals import front_rows
from bench.report.inline_probe_goals import STALL_MS, inline_rows
from bench.report.plots import PLOT_DPI
from bench.report.probe_text import dig, met_word, ms

PLOT = "stalls.png"
"""The report's one plot: :func:`stall_figure`."""
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
    stalls = dig(results, "probes", "stalls") or {}
    waits: dict[str, list[float | None]] = {}
    for mode in stalls:
        found: list[float | None] = []
        for key in STALL_KEYS:
            if key == "quiet":
                window = dig(stalls, mode, "quiet")
                found.append(max((s.get("max_ms", 0) for s in window.values()), default=0)
                             if window else None)  # fmt: skip
            else:
                found.append(dig(stalls, mode, key, "longest_wait_ms"))
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


def goal_rows(results: Results) -> list[dict[str, Any]]:
    """Every goal row: the in-front-end runs', then the rest of the front end's."""
    return [*inline_rows(results), *front_rows(results)]


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
    stalls = dig(results, "probes", "stalls") or {}
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
            lines.append(f"| {key} | " + " | ".join(ms(waits[m][i]) for m in stalls) + " |")
        lines += ["", f"![bystanders' longest waits by mode]({PLOT})"]
        lines += ["", "Where each version ran after the probes (front ends in front / workers):"]
        for mode in stalls:
            lines.append(f"- {mode}: {_cell(dig(stalls, mode, 'placed_after'))}")
    lines += ["", "All figures: `results.json`."]
    return "\n".join(lines) + "\n"
