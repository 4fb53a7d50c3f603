"""What tracing may cost at each sample ratio (tiny MLP, one server core).

The figure is the ``tracing`` scenario's side-by-side CPU cost when measured (met when the
median's 95 % interval lies within the goal), else the median of the paired rounds in turn, else
(reports from before paired rounds) the ratio of the throughput medians.
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import TRACING, median, percent_spread, ratio, row
from bench.systems.tracing import TRACING_CONTROL

TRACING_GOALS = {"ratio 0": 0.01, "ratio 0.01": 0.02}
"""Most throughput tracing may cost at each sample ratio (tiny MLP, one server core); at ratio
1.0 the report gives the µs each traced call adds (no bar: a cheaper call makes the same spans a
larger share)."""


def tracing_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """Tracing's cost against tracing off at each ratio of :data:`TRACING_GOALS`, then what one
    traced call adds at ratio 1.0."""
    sat = section.get("mlp", {})
    rows = []
    for label, most in TRACING_GOALS.items():
        goal, case, target = (
            f"tracing cost at sample {label}",
            "tiny MLP, 1 server core",
            f"≤ {most:.0%}",
        )
        if not section.get("available") or not median(sat.get(label)) or not median(sat.get("off")):
            rows.append(row(goal, case, target, group=TRACING))
            continue
        note = f"{sat[label]['rps']['median']:.0f} vs {sat['off']['rps']['median']:.0f} req/s"
        side = section.get("side_by_side", {}).get("cost", {}).get(label)
        paired = section.get("paired_cost", {}).get(label)
        if side and side.get("n"):
            # Met when the median's 95 % interval lies within the goal (the median, without one).
            ci = side.get("ci")
            cost, value = ci[1] if ci else side["median"], percent_spread(side)
            note = f"CPU per request served side by side, median of {side['n']} rounds"
            control = section["side_by_side"]["cost"].get(TRACING_CONTROL)
            if control and control.get("n"):
                note += f" (a second off against off: {percent_spread(control)})"
            if paired and paired.get("n"):
                note += f"; in turn: {percent_spread(paired)} of throughput"
        elif paired and paired.get("n"):
            cost, value = paired["median"], percent_spread(paired)
            note += f"; median of {paired['n']} paired rounds (range over rounds)"
        else:  # reports from before paired rounds
            r = ratio(sat[label], sat["off"])
            cost = 1 - r[0]
            value = f"{cost:.1%} ({1 - r[2]:.1%}–{1 - r[1]:.1%})"
        rows.append(row(goal, case, target, value, cost <= most, note, TRACING))
    rows.append(_traced_call_row(section))
    return rows


def _traced_call_row(section: dict[str, Any]) -> dict[str, Any]:
    """What one traced call adds at ratio 1.0, in server CPU µs (side by side, medians)."""
    goal, case = "tracing at sample ratio 1.0: µs each traced call adds", "tiny MLP, 1 server core"
    cpu = section.get("side_by_side", {}).get("cpu_us_per_request", {})
    off, traced = cpu.get("off", {}).get("median"), cpu.get("ratio 1.0", {}).get("median")
    if not section.get("available") or not off or not traced:
        return row(goal, case, "report", group=TRACING)
    value = f"{traced - off:+.0f} µs"
    note = f"{traced:.0f} vs {off:.0f} µs of server CPU per request, traced every call vs off"
    return row(goal, case, "report", value, None, note, TRACING)
