"""The report's Markdown tables of measured points: a summary cell (median with min–max), a table
of systems, the concurrency sweep, batching off/on, and CPU per request by role."""

from __future__ import annotations

from typing import Any

from bench.measure.usage import CPU_ROLES
from bench.report.goal_rows import per_round, rounds_text


def cell(summary: dict[str, Any] | None, key: str, fmt: str = "{:.0f}") -> str:
    """``median (min–max)`` of ``summary[key]`` in ``fmt`` (the median alone for one repeat; — if
    missing)."""
    if not summary or key not in summary:
        return "—"
    s = summary[key]
    if s["n"] > 1:
        return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})"
    return fmt.format(s["median"])


def status(summary: dict[str, Any]) -> str:
    """A point's notes: failed, errors, gRPC OK share under 99 %, a saturated client; else ok."""
    if "error" in summary and summary.get("failed") == summary.get("repeats"):
        return "failed: " + " ".join(str(summary["error"]).split())[:100]
    parts = []
    if summary.get("errors"):
        parts.append(f"{summary['errors']} errors")
    if "ok_fraction_min" in summary and summary["ok_fraction_min"] < 0.99:
        parts.append(f"gRPC OK ≈ {summary['ok_fraction_min']:.0%}")
    if summary.get("client_saturated"):
        parts.append("client saturated")
    return ", ".join(parts) or "ok"


def system_table(rows: dict[str, dict[str, Any]], latency: bool = True) -> list[str]:
    """One row per system: req/s (and p50/p99 when ``latency``), server and client CPU, notes."""
    head = "| system | req/s median (min–max) |"
    sep = "|---|---|"
    if latency:
        head += " p50 ms | p99 ms |"
        sep += "---|---|"
    head += " server CPU (cores) | server CPU µs/req | client CPU (cores) | notes |"
    sep += "---|---|---|---|"
    lines = [head, sep]
    for name, s in rows.items():
        small = "rps" in s and s["rps"]["median"] < 100
        line = f"| {name} | {cell(s, 'rps', '{:.1f}' if small else '{:.0f}')} |"
        if latency:
            line += f" {cell(s, 'p50_ms', '{:.2f}')} | {cell(s, 'p99_ms', '{:.2f}')} |"
        line += (
            f" {cell(s, 'server_cpu_cores', '{:.2f}')} |"
            f" {cell(s, 'server_cpu_us_per_request', '{:.0f}')} |"
            f" {cell(s, 'client_cpu_cores', '{:.2f}')} | {status(s)} |"
        )
        lines.append(line)
    return lines


def per_request_table(rows: dict[str, dict[str, Any]]) -> list[str]:
    """tensorgate's own counters per request (:mod:`bench.measure.counters`), one row per system
    that recorded them; [] when none did."""
    counted = {n: s for n, s in rows.items() if "runs_per_request" in s}
    if not counted:
        return []
    lines = [
        "| system | runs/request | runs/request by round | wake-ups/request | rows/run "
        "| worker CPU µs/request |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in counted.items():
        lines.append(
            f"| {name} | {cell(s, 'runs_per_request', '{:.3f}')} | {rounds_text(per_round(s))} | "
            f"{cell(s, 'wakeups_per_request', '{:.3f}')} | {cell(s, 'rows_per_run', '{:.1f}')} | "
            f"{cell(s, 'worker_cpu_us_per_request', '{:.1f}')} |"
        )
    return lines


def sweep_table(sweep: dict[str, dict[str, Any]]) -> list[str]:
    """Systems × concurrency levels: req/s and p99 at each."""
    conc = sorted({int(c) for by_c in sweep.values() for c in by_c})
    lines = [
        "| system | " + " | ".join(f"c={c}" for c in conc) + " |",
        "|---|" + "---|" * len(conc),
    ]
    for name, by_c in sweep.items():
        cells = []
        for c in conc:
            s = by_c.get(str(c))
            cells.append(
                f"{s['rps']['median']:.0f} /s, p99 {s.get('p99_ms', {}).get('median', 0):.1f} ms"
                if s and "rps" in s
                else "—"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def batching_tables(section: dict[str, Any]) -> list[str]:
    """Batching off/on per model: a throughput/latency row per concurrency, then each point."""
    lines = ["", "## Batching on/off (1 server core, closed loop)", ""]
    lines += [
        "Parameters: "
        + "; ".join(f"`{k}`: {' '.join(v.split())}" for k, v in section["parameters"].items()),
        "",
        "| model | concurrency | system | req/s median (min–max) | p50 ms | p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    for point in section.get("points", []):
        for system, summary in section[point["key"]].items():
            rps = summary.get("rps", {})
            p50 = summary.get("p50_ms", {})
            p99 = summary.get("p99_ms", {})
            lines.append(
                f"| {point['model']} | {point['concurrency']} | {system} | "
                f"{stat_text(rps, 1)} | {stat_text(p50, 2)} | {stat_text(p99, 2)} |"
            )
    return lines


def stat_text(stat: Any, digits: int) -> str:
    """``median (min–max)`` with ``digits`` decimals, or — when ``stat`` is not a summary."""
    if not isinstance(stat, dict) or "median" not in stat:
        return "—"
    return f"{stat['median']:.{digits}f} ({stat['min']:.{digits}f}–{stat['max']:.{digits}f})"


def roles_table(roles: dict[str, dict[str, float]]) -> list[str]:
    """The side-by-side systems' CPU µs per request by role, with each role's difference from
    off's (where each system's cost lies)."""
    if not roles:
        return []
    names = list(CPU_ROLES)
    off = roles.get("off", {})
    lines = [
        "",
        "CPU µs per request by role (the mean over the rounds; in brackets, against off):",
        "",
        "| system | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for key, values in roles.items():
        cells = []
        for role in names:
            value = values.get(role, 0.0)
            delta = "" if key == "off" or role not in off else f" ({value - off[role]:+.0f})"
            cells.append(f"{value:.0f}{delta}")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return lines
