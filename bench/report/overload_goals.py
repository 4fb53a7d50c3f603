"""Overload and idle memory, from one run's scenarios.

- ``overload``, each model on its system (admission flags on), open loop at 2× the measured
  capacity: goodput ≥ 0.9× capacity, p99 of the accepted calls ≤ 3× the p99 at capacity, the
  excess refused fast (UNAVAILABLE / RESOURCE_EXHAUSTED), not timed out;
- ``idle-rss``: the gateway's RSS at idle serving the demo model < 150 MB.
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import OVERLOAD, row


def overload_rows(sc: dict[str, Any]) -> list[dict[str, Any]]:
    """The overload rows of each model, then the idle memory row."""
    rows: list[dict[str, Any]] = []
    for model, case in sc.get("overload", {}).items():
        if isinstance(case, dict) and "points" in case:
            rows += _overload_rows(model, case)
    rss = sc.get("idle-rss", {})
    if "idle_mb" in rss:
        rows.append(
            row(
                "gateway RSS at idle (demo model)",
                "auto workers",
                "< 150 MB",
                f"{rss['idle_mb']:.1f} MB",
                rss["idle_mb"] < 150,
                f"workers: {', '.join(f'{w:.0f}' for w in rss.get('workers_mb', []))} MB",
                OVERLOAD,
            )
        )
    return rows


def _overload_rows(model: str, case: dict[str, Any]) -> list[dict[str, Any]]:
    where = f"{case.get('system', 'tensorgate')}, open loop at 2× capacity"
    points = case["points"]
    at_cap, at_2x = points.get("1"), points.get("2")
    capacity = case.get("capacity_rps", 0.0)
    if not at_cap or not at_2x or not capacity or "goodput" not in at_2x:
        return [row(f"overload ({model})", where, "", group=OVERLOAD)]
    goodput = at_2x["goodput"]["median"]
    statuses = at_2x.get("statuses", {})
    rejected = sum(v for k, v in statuses.items() if k in ("Unavailable", "ResourceExhausted"))
    # A request past its deadline ends as DEADLINE_EXCEEDED or, when the server's copy of the
    # deadline fires first, CANCELLED: both are time-outs, not fast rejections.
    timed_out = statuses.get("DeadlineExceeded", 0) + statuses.get("Canceled", 0)
    p99_cap = at_cap.get("p99_ms", {}).get("median", 0.0)
    p99_2x = at_2x.get("p99_ms", {}).get("median", 0.0)
    lag = at_2x.get("send_lag_p99_ms", {}).get("median")
    note = f"client send lag p99 {lag:.1f} ms" if lag is not None else ""
    return [
        row(
            f"overload goodput ({model})",
            where,
            "≥ 0.9 × capacity",
            f"{goodput / capacity:.2f}× ({goodput:.1f} of {capacity:.1f} req/s)",
            goodput / capacity >= 0.9,
            note,
            OVERLOAD,
        ),
        row(
            f"overload p99 of accepted ({model})",
            where,
            "≤ 3 × p99 at capacity",
            f"{p99_2x:.1f} ms vs {p99_cap:.1f} ms",
            p99_2x <= 3 * p99_cap if p99_cap else None,
            group=OVERLOAD,
        ),
        row(
            f"overload excess rejected, not timed out ({model})",
            where,
            "UNAVAILABLE/RESOURCE_EXHAUSTED, no DEADLINE_EXCEEDED",
            f"rejected {rejected}, timed out {timed_out}",
            timed_out == 0 and (rejected > 0 or goodput / capacity >= 1.5),
            ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())),
            OVERLOAD,
        ),
    ]
