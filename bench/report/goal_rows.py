"""A goal row and the arithmetic every goal shares: medians, ratios of medians with the range the
repeats allow, percentages with their spread.

A summary (``Summary``) is one measured point as :func:`bench.measure.points.summarize` makes it:
per key (``rps``, ``p50_ms``, ``server_cpu_us_per_request``...) a ``median`` / ``min`` / ``max``.
A ratio's range combines the repeats' extremes (worst min / best max and back), so a ratio whose
range straddles the target is visibly uncertain.
"""

from __future__ import annotations

from typing import Any

ISSUE = "issue 12"
TRACING = "issue 10"
EARLIER = "earlier"
RELIABILITY = "issue 14"
FRONTENDS = "issue 27"
COST = "issue 26"
V2 = "issue 28"
FLOOR = "issue 33"
OPENVINO = "issue 36"
"""Goal groups, each a table of the report: issue 12's goal table, issue 10's tracing goals, the
earlier issues' goals still open (overload, memory), issue 14's reliability goals, issue 27's
front-end goals, issue 26's cost goals, issue 28's v2 comparison, issue 33's floor goals, issue
36's OpenVINO rows."""
Summary = dict[str, Any]


def median(summary: Summary | None, key: str = "rps") -> float | None:
    """The median of ``key``, or None when it is missing or zero."""
    if not summary or key not in summary:
        return None
    value = summary[key]["median"]
    return float(value) if value else None


def ratio(a: Summary, b: Summary, key: str = "rps") -> tuple[float, float, float]:
    """``a / b`` on ``key``: the ratio of medians, its lowest and its highest."""
    return (
        a[key]["median"] / b[key]["median"],
        a[key]["min"] / b[key]["max"],
        a[key]["max"] / b[key]["min"],
    )


def fmt_ratio(r: tuple[float, float, float]) -> str:
    """A :func:`ratio` as ``1.23× (1.10–1.40)``."""
    return f"{r[0]:.2f}× ({r[1]:.2f}–{r[2]:.2f})"


def percent_spread(s: dict[str, Any]) -> str:
    """A median / min / max of fractions, as ``median (min–max)`` in percent; with the median's
    95 % interval when ``s`` has one (``ci``), ``median (95 % CI lo–hi; min–max)``."""
    ci = s.get("ci")
    if ci:
        return f"{s['median']:.1%} (95% CI {ci[0]:.1%}–{ci[1]:.1%}; {s['min']:.1%}–{s['max']:.1%})"
    return f"{s['median']:.1%} ({s['min']:.1%}–{s['max']:.1%})"


def row(
    goal: str,
    case: str,
    target: str,
    value: str = "not measured",
    met: bool | None = None,
    note: str = "",
    group: str = ISSUE,
) -> dict[str, Any]:
    """One goal row: ``met`` is True, False or None (n/a: not measured or only reported)."""
    return {
        "group": group,
        "goal": goal,
        "case": case,
        "target": target,
        "value": value,
        "met": met,
        "note": note,
    }


def best(section: dict[str, Any], names: tuple[str, ...]) -> str | None:
    """The one of ``names`` with the highest median throughput in ``section`` (None: none)."""
    measured = [n for n in names if median(section.get(n))]
    return max(measured, key=lambda n: section[n]["rps"]["median"], default=None)
