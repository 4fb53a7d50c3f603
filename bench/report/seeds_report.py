"""The ``seeds`` scenario's section of the report: its goal rows, then a table of each run's
totals — the JPEG runs at each user count, and the float-row runs (its chart, ``seeds.png``, is
:mod:`bench.report.plots`')."""

from __future__ import annotations

import math
from typing import Any

TENSORGATE_JPEG = ("tensorgate TF Serving REST (b64)", "tensorgate V2 REST (binary)")
FASTAPI_JPEG = "FastAPI (UploadFile, PIL)"
TENSORGATE_ROWS = "tensorgate TF Serving REST (float rows)"
FASTAPI_ROWS = "FastAPI (raw float32)"
PLATEAU_FACTOR = 1.2
"""Above capacity, tensorgate's requests/s on the plateau over FastAPI's, at least."""
ROWS_P50_FACTOR = 1.2
"""Float rows: tensorgate's p50 over the raw-bytes FastAPI peer's, at most."""


def markdown(seeds: dict[str, Any], plotted: bool) -> list[str]:
    """The section's lines (none when the scenario did not run)."""
    if not seeds.get("jpeg") and not seeds.get("rows"):
        return []
    users = seeds["users"]
    images = ", ".join(f"{n} at {size}" for size, n in seeds.get("images", {}).items())
    lines = [
        "",
        f"## The seeds' load test (Locust, {seeds['model']} over REST, both cores): one user "
        f"added a second up to {' and to '.join(map(str, users))}, then "
        f"{seeds['plateau_s']:g} s",
        "",
        "Each user aims at one request a second (the seeds' pacing). Locust's latency "
        "percentiles are cumulative since the start of the run. JPEG runs: one image a request, "
        f"in turn from {images} (those resized by the server).",
        "",
    ]
    goals = goal_rows(seeds)
    if goals:
        lines += ["| goal | case | target | value | met |", "|---|---|---|---|---|"]
        for goal in goals:
            met = {True: "yes", False: "**no**", None: "n/a"}[goal["met"]]
            lines.append(
                f"| {goal['goal']} | {goal['case']} | {goal['target']} | {goal['value']} | {met} |"
            )
        lines.append("")
    if plotted:
        lines += ["![seeds](seeds.png)", ""]
    for table, title in (("jpeg", "JPEG bodies"), ("rows", "float rows (the decoded image)")):
        for count, runs in seeds.get(table, {}).items():
            lines += [f"**{title}, {count} users**", "", *_table(runs), ""]
    return lines


def _table(runs: dict[str, Any]) -> list[str]:
    lines = [
        "| system | requests | failures | req/s (run) | req/s (plateau) "
        "| p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in runs.items():
        if "error" in s:
            lines.append(f"| {name} | {s['error']} | | | | | | |")
            continue
        lines.append(
            f"| {name} | {s['requests']} | {s['failures']} | {s['rps']:.1f} | "
            f"{s['plateau_rps']:.1f} | {s['p50_ms']:.0f} | {s['p95_ms']:.0f} | {s['p99_ms']:.0f} |"
        )
    return lines


def goal_rows(seeds: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenario's acceptance rows: below capacity (the first user count) tensorgate's p50
    and p95 at most FastAPI's with no failure; above it (the last) its plateau requests/s at
    least :data:`PLATEAU_FACTOR` × FastAPI's with no failure (p99 reported); float rows: its
    p50 at most :data:`ROWS_P50_FACTOR` × the raw-bytes peer's."""
    users = [str(u) for u in seeds.get("users", [])]
    rows: list[dict[str, Any]] = []
    if not users:
        return rows
    below, above = seeds.get("jpeg", {}).get(users[0], {}), seeds.get("jpeg", {}).get(users[-1], {})
    peer = below.get(FASTAPI_JPEG, {})
    for name in TENSORGATE_JPEG:
        ours = below.get(name, {})
        if _ok(ours) and _ok(peer):
            met = (
                ours["p50_ms"] <= peer["p50_ms"]
                and ours["p95_ms"] <= peer["p95_ms"]
                and ours["failures"] == 0
            )
            value = (
                f"p50 {ours['p50_ms']:.0f} vs {peer['p50_ms']:.0f} ms, p95 {ours['p95_ms']:.0f} "
                f"vs {peer['p95_ms']:.0f} ms, {ours['failures']} failures"
            )
            rows.append(
                _row(f"{users[0]} users, JPEG", name, "p50, p95 ≤ FastAPI's; 0 failed", value, met)
            )
    if len(users) > 1:
        peer = above.get(FASTAPI_JPEG, {})
        for name in TENSORGATE_JPEG:
            ours = above.get(name, {})
            if _ok(ours) and _ok(peer) and peer["plateau_rps"]:
                factor = ours["plateau_rps"] / peer["plateau_rps"]
                met = factor >= PLATEAU_FACTOR and ours["failures"] == 0
                value = (
                    f"{ours['plateau_rps']:.1f} vs {peer['plateau_rps']:.1f} req/s "
                    f"({factor:.2f}×), {ours['failures']} failures, p99 {ours['p99_ms']:.0f} ms"
                )
                target = f"plateau req/s ≥ {PLATEAU_FACTOR:g}× FastAPI's; 0 failed"
                rows.append(_row(f"{users[-1]} users, JPEG", name, target, value, met))
    float_rows = seeds.get("rows", {}).get(users[0], {})
    ours, peer = float_rows.get(TENSORGATE_ROWS, {}), float_rows.get(FASTAPI_ROWS, {})
    if _ok(ours) and _ok(peer) and peer["p50_ms"]:
        factor = ours["p50_ms"] / peer["p50_ms"]
        value = f"p50 {ours['p50_ms']:.0f} vs {peer['p50_ms']:.0f} ms ({factor:.2f}×)"
        target = f"p50 ≤ {ROWS_P50_FACTOR:g}× the raw-bytes peer's"
        rows.append(
            _row(
                f"{users[0]} users, float rows",
                TENSORGATE_ROWS,
                target,
                value,
                factor <= ROWS_P50_FACTOR,
            )
        )
    return rows


def _ok(run: dict[str, Any]) -> bool:
    return bool(run) and "error" not in run and not math.isnan(run.get("p50_ms", math.nan))


def _row(case: str, system: str, target: str, value: str, met: bool) -> dict[str, Any]:
    return {
        "goal": f"seeds' test, {case}",
        "case": system,
        "target": target,
        "value": value,
        "met": met,
    }
