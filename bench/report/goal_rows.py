"""A goal row and the arithmetic every goal shares: medians, ratios of medians with the range the
repeats allow, percentages with their spread.

A summary (``Summary``) is one measured point as :func:`bench.measure.points.summarize` makes it:
per key (``rps``, ``p50_ms``, ``server_cpu_us_per_request``...) a ``median`` / ``min`` / ``max``.
A ratio's range combines the repeats' extremes (worst min / best max and back), so a ratio whose
range straddles the target is visibly uncertain.
"""

from __future__ import annotations

from typing import Any

LIGHT_MODELS = "light models"
HEAVY_MODELS = "heavy models"
PEERS = "peers"
COST = "cost"
V2 = "v2"
FRONT_ENDS = "front ends"
TRACING = "tracing"
OVERLOAD = "overload and memory"
RELIABILITY = "reliability"
GROUPS = {
    LIGHT_MODELS: "Light models at the transport floor, with the default flags and with batching",
    HEAVY_MODELS: "ResNet50 at the runtimes' own speed (ONNX Runtime, OpenVINO fp32 and bf16)",
    PEERS: "tensorgate against the transport ceiling and its peers",
    COST: "What serving the tiny MLP costs",
    V2: "KServe v2 against the v2 peers",
    FRONT_ENDS: "Several front ends sharing one worker pool, and the drain",
    TRACING: "What tracing costs",
    OVERLOAD: "Overload and idle memory",
    RELIABILITY: "Reliability: soak and chaos",
}
"""The goal groups (a row's ``group``) and their titles, in the report's order: each group is
one table."""
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


def per_round(point: Summary | None, key: str = "runs_per_request") -> list[float | None]:
    """``key`` in each round of a summarized point (its ``runs``), in order: None for a round
    that failed or did not record it; [] when the point was not measured."""
    rounds = (point or {}).get("runs", [])
    return [None if "error" in r else r.get(key) for r in rounds]


def rounds_text(values: list[float | None], digits: int = 3) -> str:
    """:func:`per_round`'s values as ``0.000, —, 0.002`` (— for a round without one)."""
    return ", ".join("—" if v is None else f"{v:.{digits}f}" for v in values)


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
    group: str = PEERS,
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
