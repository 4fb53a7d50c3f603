"""Reliability, from one run's ``soak`` and ``chaos`` scenarios.

- soak (steady open-loop load on the MLP for minutes): no failed request; the gateway's and
  workers' RSS and the fds flat (the end within 5 % of the start after warm-up; fds +0);
- chaos (a worker of two SIGKILLed every few seconds under open-loop load): goodput and failures,
  reported.
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import RELIABILITY, row


def reliability_rows(soak: dict[str, Any], chaos: dict[str, Any]) -> list[dict[str, Any]]:
    """The soak rows (no failed request; RSS and fds flat), then the chaos row (reported)."""
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
