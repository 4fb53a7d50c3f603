"""The earlier issues' goals still open: overload and idle memory (group ``earlier``), and issue
14's reliability goals (soak, chaos), from one run's scenarios."""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import EARLIER, RELIABILITY, row


def earlier_rows(sc: dict[str, Any]) -> list[dict[str, Any]]:
    """Overload and memory rows (group ``earlier``), then the reliability rows (issue 14)."""
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
                EARLIER,
            )
        )
    return rows + _reliability_rows(sc.get("soak", {}), sc.get("chaos", {}))


def _reliability_rows(soak: dict[str, Any], chaos: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    flat = soak.get("flatness", {})
    if "result" in soak:
        case = f"MLP, open loop at {soak['rps']:.0f} req/s for {soak['duration_s'] / 60:.1f} min"
        sent = soak["result"].get("rps", 0) * soak["duration_s"]
        rows.append(
            row(
                "soak: no failed request",
                case,
                "0 failed",
                f"{soak['failed']} failed of {sent:.0f}",
                soak["failed"] == 0,
                ", ".join(f"{k}: {v}" for k, v in soak["result"].get("statuses", {}).items()),
                RELIABILITY,
            )
        )
        series = {k: v for k, v in flat.items() if k.endswith("_mb")}
        value = ", ".join(f"{k[:-3]} {v['start']:.1f}→{v['end']:.1f} MB" for k, v in series.items())
        if "fds" in flat:
            value += f"; fds {flat['fds']['start']:.0f}→{flat['fds']['end']:.0f}"
        rows.append(
            row(
                "soak: gateway and worker RSS flat, fds flat",
                case,
                "end within 5 % of start; fds +0",
                value,
                flat.get("flat"),
                group=RELIABILITY,
            )
        )
    if "result" in chaos:
        statuses = chaos["result"].get("statuses", {})
        rows.append(
            row(
                "chaos: goodput and failures while workers are killed",
                f"2 workers, one SIGKILLed every {chaos['kill_every_s']:.0f} s, "
                f"{chaos['rps']:.0f} req/s offered",
                "reported",
                f"goodput {chaos['goodput_ratio']:.2f}× offered; {chaos['failed']} failed, "
                f"{len(chaos.get('kills', []))} kills",
                None,
                ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())),
                RELIABILITY,
            )
        )
    return rows


def _overload_rows(model: str, case: dict[str, Any]) -> list[dict[str, Any]]:
    where = f"{case.get('system', 'tensorgate')}, open loop at 2× capacity"
    points = case["points"]
    at_cap, at_2x = points.get("1"), points.get("2")
    capacity = case.get("capacity_rps", 0.0)
    if not at_cap or not at_2x or not capacity or "goodput" not in at_2x:
        return [row(f"overload ({model})", where, "", group=EARLIER)]
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
            EARLIER,
        ),
        row(
            f"overload p99 of accepted ({model})",
            where,
            "≤ 3 × p99 at capacity",
            f"{p99_2x:.1f} ms vs {p99_cap:.1f} ms",
            p99_2x <= 3 * p99_cap if p99_cap else None,
            group=EARLIER,
        ),
        row(
            f"overload excess rejected, not timed out ({model})",
            where,
            "UNAVAILABLE/RESOURCE_EXHAUSTED, no DEADLINE_EXCEEDED",
            f"rejected {rejected}, timed out {timed_out}",
            timed_out == 0 and (rejected > 0 or goodput / capacity >= 1.5),
            ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())),
            EARLIER,
        ),
    ]
