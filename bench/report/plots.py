"""The report's PNG plots (matplotlib figures without pyplot, 72 dpi): sweep, ramp, overload, seeds.

Every system keeps one colour in every panel of every plot (:func:`system_colour`: a hue per
family, a shade per configuration); line styles tell the percentiles apart. Every line is in a
legend and every axis is labelled.
"""

from __future__ import annotations

import colorsys
import zlib
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bench.systems.catalog import CATALOG, OPENVINO_SYSTEMS, family

PLOT_DPI = 72
FAMILY_COLOURS = {
    "tensorgate": "#1f77b4",
    "echo": "#555555",
    "triton": "#2ca02c",
    "kserve": "#9467bd",
    "mlserver": "#d62728",
    "fastapi": "#ff7f0e",
    "tensorgate-openvino": "#17becf",
}
_SHADES = (0.0, 0.28, -0.22, 0.48, -0.38, 0.62, -0.5, 0.14, -0.11, 0.38, -0.3, 0.55, 0.07, -0.16)
"""Lightness shifts of a family's configurations, in catalog order (0: the family's colour)."""
_HUE_TURN = 0.05
"""Hue turn for each further round of shades in a large family."""
PERCENTILE_STYLES = {"p50": "-", "p90": ":", "p99": "--"}
SEEDS_STYLES = {"p50": "-", "p95": ":", "p99": "--"}
"""Locust's percentiles (it has no p90 column in its history)."""


def system_colour(name: str) -> str:
    """The colour of system ``name`` in every plot (``#rrggbb``)."""
    if name not in CATALOG:
        hue = zlib.crc32(name.encode()) % 360 / 360  # stable for names outside the catalog
        r, g, b = colorsys.hls_to_rgb(hue, 0.4, 0.5)
        return _hex(r, g, b)
    fam = _colour_family(name)
    siblings = [n for n in CATALOG if _colour_family(n) == fam]
    turn, index = divmod(siblings.index(name), len(_SHADES))
    shift = _SHADES[index]
    base = FAMILY_COLOURS[fam]
    h, lightness, s = colorsys.rgb_to_hls(*(int(base[i : i + 2], 16) / 255 for i in (1, 3, 5)))
    h = (h + turn * _HUE_TURN) % 1.0  # past the shades, the family's hue turns a little
    room = 1 - lightness if shift > 0 else lightness  # towards white, or towards black
    lightness = min(0.85, max(0.12, lightness + shift * room))
    return _hex(*colorsys.hls_to_rgb(h, lightness, s))


def _colour_family(name: str) -> str:
    """The system's family, tensorgate on OpenVINO apart (a family has 12 shades)."""
    return "tensorgate-openvino" if name in OPENVINO_SYSTEMS else family(name)


def _hex(r: float, g: float, b: float) -> str:
    return "#" + "".join(f"{round(c * 255):02x}" for c in (r, g, b))


def figures(results: dict[str, Any]) -> dict[str, Figure]:
    """The plots ``results`` has data for, by file name (not yet saved)."""
    sc = results["scenarios"]
    out: dict[str, Figure] = {}
    sweep = sc.get("tiny", {}).get("sweep", {})
    if any("rps" in s for by_c in sweep.values() for s in by_c.values()):
        out["sweep.png"] = _sweep(sweep)
    ramp = sc.get("ramp", {})
    if any(s.get("timeline") for s in ramp.get("systems", {}).values()):
        out["ramp.png"] = _ramp(ramp)
    over = {
        m: c for m, c in sc.get("overload", {}).items() if isinstance(c, dict) and c.get("points")
    }
    if over:
        out["overload.png"] = _overload(over)
    seeds = sc.get("seeds", {})
    if any(s.get("timeline") for s in seeds_runs(seeds).values()):
        out["seeds.png"] = _seeds(seeds)
    return out


def write_plots(results: dict[str, Any], out: Path) -> list[str]:
    """Write the plots that ``results`` has data for into ``out``; return their file names."""
    written = []
    for name, fig in figures(results).items():
        fig.savefig(out / name, dpi=PLOT_DPI)
        written.append(name)
    return written


def _figure(panels: int, width: float = 5.2, height: float = 3.9) -> tuple[Figure, list[Axes]]:
    """A figure of ``panels`` side by side (no pyplot: nothing global to close)."""
    fig = Figure(figsize=(width * panels, height), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)
    return fig, list(axes[0])


def _legend_below(ax: Axes, entries: int) -> None:
    """The panel's legend under its x axis, so it never hides a line."""
    columns = 3 if entries > 6 else 2
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=columns)


def _sweep(sweep: dict[str, dict[str, Any]]) -> Figure:
    fig, (ax1, ax2) = _figure(2, height=3.6 + 0.12 * len(sweep))
    ticks = sorted({int(c) for by_c in sweep.values() for c in by_c})
    for name, by_c in sweep.items():
        cs = sorted(int(c) for c in by_c if "rps" in by_c[c])
        if not cs:
            continue
        colour = system_colour(name)
        ax1.plot(cs, [by_c[str(c)]["rps"]["median"] for c in cs], "-o", color=colour, label=name)
        p99 = [by_c[str(c)].get("p99_ms", {}).get("median", float("nan")) for c in cs]
        ax2.plot(cs, p99, "--o", color=colour, label=f"{name} p99")
    ax1.set_title("MLP, 1 server core: throughput")
    ax1.set_ylabel("requests/s (median of repeats)")
    ax2.set_title("MLP, 1 server core: p99 latency")
    ax2.set_ylabel("p99 latency (ms, log scale)")
    ax2.set_yscale("log")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(c) for c in ticks])
        ax.set_xlabel("concurrency (requests in flight)")
        ax.grid(alpha=0.3)
        _legend_below(ax, len(sweep))
    return fig


def _ramp(ramp: dict[str, Any]) -> Figure:
    fig, (ax1, ax2) = _figure(2, height=3.6 + 0.3 * len(ramp["systems"]))
    for name, s in ramp["systems"].items():
        tl = s.get("timeline", [])
        if not tl:
            continue
        colour = system_colour(name)
        ts = [row["t"] for row in tl]
        ax1.plot(ts, [row["rps"] for row in tl], color=colour, label=name)
        for pct, style in PERCENTILE_STYLES.items():
            values = [row.get(f"{pct}_ms", float("nan")) for row in tl]
            ax2.plot(ts, values, style, color=colour, label=f"{name} {pct}")
    ax1.set_title(f"ramp ({ramp['model']}, {ramp['layout']}): throughput")
    ax1.set_ylabel("requests/s")
    ax2.set_title("latency per second: p50, p90, p99")
    ax2.set_ylabel("latency (ms)")
    for ax in (ax1, ax2):
        ax.set_xlabel(f"seconds (one user added every {ramp['step_s']:g} s)")
        ax.grid(alpha=0.3)
        _legend_below(ax, len(ax.get_lines()))
    return fig


def _overload(over: dict[str, dict[str, Any]]) -> Figure:
    fig, axes = _figure(len(over), width=5.6, height=4.4)
    for ax, (model, case) in zip(axes, over.items(), strict=True):
        fs = sorted(case["points"], key=float)
        cap = case["capacity_rps"]
        system = case["system"]
        colour = system_colour(system)
        xs = [float(f) * cap for f in fs]
        goodput = [case["points"][f].get("goodput", {}).get("median", 0) for f in fs]
        ax.plot(xs, goodput, "-o", color=colour, label=f"{system} goodput (OK answers/s)")
        ax.plot(xs, xs, ":", color="grey", label="offered load")
        ax.axhline(cap, color="black", lw=0.8, label=f"capacity, closed loop ({cap:.0f} req/s)")
        ax.set_xlabel("offered requests/s (open loop)")
        ax.set_ylabel("requests/s")
        ax.set_title(f"overload: {model} ({system}, {case['layout']})")
        ax.grid(alpha=0.3)
        twin = ax.twinx()
        p99 = [case["points"][f].get("p99_ms", {}).get("median", float("nan")) for f in fs]
        twin.plot(xs, p99, "--.", color=colour, label=f"{system} p99 of accepted (ms, right)")
        twin.set_ylabel("p99 latency of accepted requests (ms)")
        handles, labels = ax.get_legend_handles_labels()
        twin_handles, twin_labels = twin.get_legend_handles_labels()
        ax.legend(
            handles + twin_handles,
            labels + twin_labels,
            fontsize=7,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.16),
            ncol=2,
        )
    return fig


def seeds_runs(seeds: dict[str, Any]) -> dict[str, Any]:
    """The runs the seeds' chart shows: the JPEG runs at the most users."""
    jpeg = seeds.get("jpeg", {})
    return dict(jpeg[max(jpeg, key=int)]) if jpeg else {}


def _seeds(seeds: dict[str, Any]) -> Figure:
    """The seeds' charts: requests/s (and users), latency percentiles, failures/s over time."""
    systems = {n: s for n, s in seeds_runs(seeds).items() if s.get("timeline")}
    most = max(seeds["jpeg"], key=int)
    fig = Figure(figsize=(15.6, 4.4), layout="constrained")
    rps, latency, failures = fig.subplots(1, 3)
    users = rps.twinx()
    for name, s in systems.items():
        colour = system_colour(name)
        tl = s["timeline"]
        ts = [row["t"] for row in tl]
        rps.plot(ts, [row["rps"] for row in tl], color=colour, label=name)
        users.plot(ts, [row["users"] for row in tl], color=colour, alpha=0.35, lw=1)
        for pct, style in SEEDS_STYLES.items():
            values = [row[f"{pct}_ms"] for row in tl]
            latency.plot(ts, values, style, color=colour, label=f"{name} {pct}")
        failures.plot(ts, [row["failures_per_s"] for row in tl], color=colour, label=name)
    rps.set_title(f"requests/s ({seeds['model']}, one JPEG a request)")
    rps.set_ylabel("requests/s")
    users.set_ylabel("users (faint lines)")
    latency.set_title("latency: p50, p95, p99 (Locust, cumulative)")
    latency.set_ylabel("latency (ms)")
    failures.set_title("failures/s")
    failures.set_ylabel("failures/s")
    for ax in (rps, latency, failures):
        ax.set_xlabel(f"seconds (one user added a second up to {most})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    return fig
