"""The report of ``python -m bench codecs``: ``results.json`` and ``README.md``.

Two tables, CPU per call (medians, min–max over the rounds): the JPEG decoders on each size of
the seeds' images (decode, and decode + resize to 224 × 224; the gateway's whole path for one
image), and the seeds' float-row JSON body read into its tensor before and now, with the ratio
the acceptance bar reads (now over before: at most 1/4). ``python -m bench report DIR``
re-renders a directory whose ``results.json`` is of this kind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

JSON_BAR = 0.25
"""The acceptance bar: CPU per call of the float-row body now, over before."""
JSON_PAIRS = (
    ("TF Serving rows", "tf-rows before (orjson)", "tf-rows now (json_numbers)"),
    ("V2 data", "v2-data before (orjson)", "v2-data now (json_numbers)"),
)


def write(results: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "README.md").write_text(markdown(results))


def rebuild(out: Path) -> None:
    write(json.loads((out / "results.json").read_text()), out)


def _ms(figures: dict[str, Any]) -> str:
    if "unavailable" in figures:
        return f"unavailable ({figures['unavailable']})"
    return (
        f"{figures['median_s'] * 1e3:.3f} ({figures['min_s'] * 1e3:.3f}–"
        f"{figures['max_s'] * 1e3:.3f})"
    )


def json_ratio(results: dict[str, Any], before: str, now: str) -> float | None:
    found = results.get("json", {})
    if "median_s" not in found.get(before, {}) or "median_s" not in found.get(now, {}):
        return None
    return float(found[now]["median_s"]) / float(found[before]["median_s"])


def markdown(results: dict[str, Any]) -> str:
    run = results["run"]
    plan = run["plan"]
    lines = [
        f"# Request codecs: CPU per call — {run['id']}",
        "",
        f"`python -m bench codecs` on {run['machine'].get('cpu_model') or 'this machine'} "
        f"({run['machine'].get('cpus', '?')} CPUs): {plan['rounds']} rounds, each at least "
        f"{plan['round_cpu_s']} s of CPU per figure; milliseconds of CPU per call, median "
        "(min–max). Libraries: "
        + ", ".join(f"{k} {v}" for k, v in run.get("libraries", {}).items())
        + ".",
        "",
        "## JPEG decoders (the seeds' images, RGB)",
        "",
        "| size | JPEG bytes | decoder | decode | decode + resize to 224×224 |",
        "|---|---|---|---|---|",
    ]
    for size, row in results.get("images", {}).items():
        for name, figures in row.items():
            if name in ("jpeg_bytes", "tensorgate"):
                continue
            if "unavailable" in figures:
                lines.append(f"| {size} | {row['jpeg_bytes']} | {name} | {_ms(figures)} | |")
                continue
            lines.append(
                f"| {size} | {row['jpeg_bytes']} | {name} | {_ms(figures['decode'])} | "
                f"{_ms(figures['decode+resize'])} |"
            )
        whole = row.get("tensorgate", {}).get("image→tensor")
        if whole:
            lines.append(
                f"| {size} | {row['jpeg_bytes']} | tensorgate (header, decode, resize, "
                f"float32) | | {_ms(whole)} |"
            )
    found = results.get("json", {})
    lines += [
        "",
        f"## The seeds' float-row body ({found.get('body_bytes', 0) / 1e6:.2f} MB of JSON, "
        "one 224×224×3 float32 image) into its tensor",
        "",
        "| path | CPU ms per call |",
        "|---|---|",
    ]
    for name, figures in found.items():
        if name != "body_bytes":
            lines.append(f"| {name} | {_ms(figures)} |")
    lines += ["", f"| body | now / before | goal ≤ {JSON_BAR:g} |", "|---|---|---|"]
    for label, before, now in JSON_PAIRS:
        ratio = json_ratio(results, before, now)
        shown = "n/a" if ratio is None else f"{ratio:.3f}"
        met = "" if ratio is None else ("met" if ratio <= JSON_BAR else "**missed**")
        lines.append(f"| {label} | {shown} | {met} |")
    return "\n".join(lines) + "\n"
