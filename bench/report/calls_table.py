"""The report's "Python calls per request" section (``calls`` scenario)."""

from __future__ import annotations

from typing import Any

ROLES = ("gateway", "front end", "worker")


def calls_section(section: dict[str, Any]) -> list[str]:
    """Markdown lines: calls per request of each system by process role (the project's own code
    apart from grpc's, asyncio's and numpy's Python); empty without the scenario."""
    rows = {k: v for k, v in section.items() if isinstance(v, dict) and "error" not in v}
    if not rows:
        return []
    lines = [
        "",
        "## Python calls per request (MLP, h2load concurrency 16, exact counts)",
        "",
        "Counted with a profiling hook in every process of the server (each coroutine resumption "
        "counts as a call); `-workers`: runs forced to the worker processes "
        "(`--inline_runs=never`), the others as the rule places them.",
        "",
        "| system | process | tensorgate's code | other Python | total |",
        "|---|---|---|---|---|",
    ]
    for system, roles in rows.items():
        for role in ROLES:
            counts = roles.get(role)
            if not counts or counts["ours"] + counts["other"] < 0.5:
                continue
            total = counts["ours"] + counts["other"]
            lines.append(
                f"| {system} | {role} | {counts['ours']:.1f} | {counts['other']:.1f} | "
                f"{total:.1f} |"
            )
    return lines
