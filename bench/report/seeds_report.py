"""The ``seeds`` scenario's section of the report: a table of each system's totals (its chart,
``seeds.png``, is :mod:`bench.report.plots`')."""

from __future__ import annotations

from typing import Any


def markdown(seeds: dict[str, Any], plotted: bool) -> list[str]:
    """The section's lines (none when the scenario did not run)."""
    if not seeds.get("systems"):
        return []
    lines = [
        "",
        f"## The seeds' load test (Locust, {seeds['model']} over REST, both cores): one user "
        f"added a second up to {seeds['users']}, then {seeds['plateau_s']:g} s",
        "",
        "Each user aims at one request a second (the seeds' pacing). Locust's latency "
        "percentiles are cumulative since the start of the run.",
        "",
    ]
    if plotted:
        lines += ["![seeds](seeds.png)", ""]
    lines += [
        "| system | requests | failures | req/s (run) | req/s (plateau) "
        "| p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in seeds["systems"].items():
        if "error" in s:
            lines.append(f"| {name} | {s['error']} | | | | | | |")
            continue
        lines.append(
            f"| {name} | {s['requests']} | {s['failures']} | {s['rps']:.1f} | "
            f"{s['plateau_rps']:.1f} | {s['p50_ms']:.0f} | {s['p95_ms']:.0f} | {s['p99_ms']:.0f} |"
        )
    return lines
