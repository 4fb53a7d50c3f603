"""The report of ``python -m bench otlp``: ``results.json``, ``README.md`` and ``otlp.png``.

CPU µs per span of each way (medians with min–max over the rounds) at each export batch size,
and tensorgate's figures over the library's. ``python -m bench report DIR`` re-renders a
directory whose ``results.json`` is of this kind.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

from bench.measure.otlp_export import ENCODERS, EXPORTS
from bench.report.plots import FAMILY_COLOURS
from bench.report.result_dir import ReportDir
from bench.report.tables import cell

PLOT = "otlp.png"
ENCODINGS = tuple(ENCODERS)
RATIOS = (
    ("tensorgate", "library", "HTTP body"),
    ("tensorgate gRPC", "library", "gRPC message"),
    ("tensorgate export", "library export", "export to the sink"),
)
"""(tensorgate's way, the library's, what they make) of the ratio table."""
STYLES = {
    "spans only": ("#7f7f7f", ":"),
    "library": ("#ff7f0e", "-"),
    "tensorgate": (FAMILY_COLOURS["tensorgate"], "-"),
    "tensorgate gRPC": (FAMILY_COLOURS["tensorgate"], "--"),
    "library export": ("#ff7f0e", "-"),
    "tensorgate export": (FAMILY_COLOURS["tensorgate"], "-"),
}


def sizes_of(results: dict[str, Any]) -> list[str]:
    """The batch sizes measured (spans, as text), smallest first."""
    return sorted(results.get("points", {}), key=int)


def ratio(results: dict[str, Any], spans: str, ours: str, theirs: str) -> float | None:
    """The median of ``ours`` over the median of ``theirs`` at ``spans`` (None if either is
    missing)."""
    point = results.get("points", {}).get(spans, {})
    if not point.get(ours, {}).get("n") or not point.get(theirs, {}).get("n"):
        return None
    return float(point[ours]["median"]) / float(point[theirs]["median"])


def markdown(results: dict[str, Any], plot: bool) -> str:
    run = results["run"]
    plan, machine = run["plan"], run["machine"]
    same = run.get("same_request", {})
    per_request = run.get("spans_per_request", 6)
    libraries = ", ".join(f"{k} {v}" for k, v in run.get("libraries", {}).items())
    lines = [
        f"# OTLP encoding: tensorgate's encoder against OpenTelemetry's — {run['id']}",
        "",
        f"{run['date']} · {machine['cpus']} CPUs ({machine['cpu_model']}) · Python "
        f"{machine['python']} · {libraries or 'library versions not recorded'} · "
        f"{plan['rounds']} rounds, each point ≥ {plan['point_cpu_s']:g} CPU s · took "
        f"{run.get('elapsed_s', 0) / 60:.1f} min",
        "",
        "The same records of traced gRPC Predicts (made by the gateway's recorder, batch observer "
        f"and tracing; {per_request} spans each: server, decode, queue wait, encode, batch, the "
        "worker's compute) encoded by OpenTelemetry's `encode_spans` over the `ReadableSpan` "
        "values the SDK needs (`library`; `spans only`: making those values, part of it) and by "
        "tensorgate's `encode_records` (`tensorgate`: the OTLP/HTTP body; `tensorgate gRPC`: "
        "parsed into the request message and serialized, as its gRPC exporter sends it); then "
        "exported to an OTLP/HTTP sink on the client's CPUs through one exporter, by the SDK's "
        "own `export` (`library export`) and by tensorgate's `export_records`. CPU of the calling "
        "thread per span; medians with min–max over the rounds.",
        "",
        f"Both encoders wrote the same request ({same.get('spans', '?')} spans): bytes "
        f"{_yes(same.get('bytes'))}, parsed messages {_yes(same.get('message'))}."
        + (f" The sink received {run['sink_spans']} spans." if "sink_spans" in run else ""),
    ]
    before, after = run.get("loadavg_before"), run.get("loadavg_after")
    if before and after:
        lines += ["", f"Load average before {_loads(before)}; after {_loads(after)}."]
    if plot:
        lines += ["", f"![otlp]({PLOT})"]
    ways = [w for w in (*ENCODINGS, *EXPORTS) if any(w in p for p in results["points"].values())]
    lines += ["", "## CPU µs per span", ""]
    lines += ["| spans | " + " | ".join(ways) + " |", "|---|" + "---|" * len(ways)]
    for spans in sizes_of(results):
        point = results["points"][spans]
        lines.append(f"| {spans} | " + " | ".join(cell(point, w, "{:.2f}") for w in ways) + " |")
    lines += ["", "## tensorgate ÷ library", ""]
    lines += [
        "Ratios of the medians; the last column is the export thread's CPU per traced Predict "
        f"({per_request} spans), the library's → tensorgate's.",
        "",
        "| spans | "
        + " | ".join(what for *_, what in RATIOS)
        + " | export µs per traced Predict |",
        "|---|---|---|---|---|",
    ]
    for spans in sizes_of(results):
        point = results["points"][spans]
        cells = [_ratio_text(ratio(results, spans, ours, theirs)) for ours, theirs, _ in RATIOS]
        per_call = "—"
        if all(point.get(w, {}).get("n") for w in EXPORTS):
            theirs, ours = (point[w]["median"] * per_request for w in EXPORTS)
            per_call = f"{theirs:.0f} → {ours:.0f}"
        lines.append(f"| {spans} | " + " | ".join(cells) + f" | {per_call} |")
    errors = [
        f"- {spans} spans, {way}: {error}"
        for spans, by_way in results["points"].items()
        for way, point in by_way.items()
        for error in point.get("errors", ())
    ]
    if errors:
        lines += ["", "## Failed rounds", "", *errors]
    return "\n".join(lines) + "\n"


def _yes(value: object) -> str:
    return "?" if value is None else ("equal" if value else "DIFFERENT")


def _ratio_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _loads(values: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in values)


def figure(results: dict[str, Any]) -> Figure:
    """CPU µs per span against the batch size: the encodings, and the exports."""
    sizes = sizes_of(results)
    fig = Figure(figsize=(10.4, 4.2), layout="constrained")
    panels = zip(fig.subplots(1, 2), (ENCODINGS, EXPORTS), ("encoding", "export"), strict=True)
    for ax, ways, title in panels:
        for way in ways:
            pts = [
                (int(s), results["points"][s][way]) for s in sizes if way in results["points"][s]
            ]
            pts = [(x, p) for x, p in pts if p.get("n")]
            if not pts:
                continue
            colour, style = STYLES[way]
            ax.errorbar(
                [x for x, _ in pts],
                [p["median"] for _, p in pts],
                yerr=[
                    [p["median"] - p["min"] for _, p in pts],
                    [p["max"] - p["median"] for _, p in pts],
                ],
                fmt="o",
                linestyle=style,
                color=colour,
                capsize=3,
                label=way,
            )
        ax.set_title(f"{title}, CPU of the calling thread")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks([int(s) for s in sizes], sizes)
        ax.set_xlabel("spans per export batch")
        ax.set_ylabel("CPU µs / span (median, min–max)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig


REPORT = ReportDir(PLOT, markdown, figure)
"""Writes (``REPORT.write(results, out)``) and re-renders (``REPORT.rebuild(out)``) a report
directory of ``python -m bench otlp``."""
