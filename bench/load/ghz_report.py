"""The load generator's report: ghz's JSON fields, plus client CPU, a timeline and send lag.

ghz fields (durations in integer nanoseconds, like Go's ``time.Duration``): ``date``, ``options``,
``count``, ``total``, ``average``, ``fastest``, ``slowest``, ``rps``, ``errorDistribution``,
``statusCodeDistribution``, ``latencyDistribution`` (10/25/50/75/90/95/99 %), ``histogram``
(11 equal-width buckets, ``mark`` in seconds). Latency statistics cover OK responses only;
``count`` and ``rps`` cover every completed request (as ghz). Extra sections:

- ``goodput``: OK responses per second; ``p999``: the 99.9 % latency (ns).
- ``client``: ``processes``, ``cpu_s``, ``cpu_cores`` (CPU seconds per wall second, summed),
  ``max_process_cpu`` and ``saturated`` (a client process at ≥ 90 % of a core: the generator may
  be the bottleneck).
- ``timeline``: per second since the start: completed, errors, rps, and p50/p90/p99 in ms when
  per-second latency was recorded.
- ``sendLag`` (open loop): how late the client sent relative to the schedule, p50/p99/max in ms.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from bench.load.histogram import Histogram, merged
from bench.load.loadgen_worker import Part

PERCENTAGES = (10, 25, 50, 75, 90, 95, 99)
GHZ_BUCKETS = 10


def ghz_histogram(hist: Histogram) -> list[dict[str, float]]:
    """ghz's 11 buckets from ``fastest`` to ``slowest`` (``mark`` = upper edge in seconds)."""
    if hist.count == 0:
        return []
    fastest, slowest = hist.min_ns, hist.max_ns
    width = (slowest - fastest) / GHZ_BUCKETS
    marks = [fastest + width * i for i in range(GHZ_BUCKETS)] + [float(slowest)]
    counts = [0] * len(marks)
    for low, high, n in hist.buckets():
        value = min(max((low + high - 1) / 2, fastest), slowest)
        i = 0
        while i < len(marks) - 1 and value > marks[i]:
            i += 1
        counts[i] += n
    return [
        {"mark": mark / 1e9, "count": c, "frequency": c / hist.count}
        for mark, c in zip(marks, counts, strict=True)
    ]


def _merge_counts(dicts: Sequence[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def _timeline(parts: Sequence[Part], limit_s: float) -> list[dict[str, Any]]:
    """Per-second rows; with a duration, only whole seconds before its end (the tail of in-flight
    completions after the end would read as a drop)."""
    seconds = sorted({s for p in parts for s in p.timeline})
    if limit_s:
        seconds = [s for s in seconds if s + 1 <= limit_s]
    rows = []
    for s in seconds:
        done = sum(p.timeline.get(s, [0, 0])[0] for p in parts)
        errors = sum(p.timeline.get(s, [0, 0])[1] for p in parts)
        row: dict[str, Any] = {"t": s, "count": done, "errors": errors, "rps": float(done)}
        hist = merged(p.timeline_latency[s] for p in parts if s in p.timeline_latency)
        if hist.count:
            for pct in (50, 90, 99):
                row[f"p{pct}_ms"] = hist.percentile(pct) / 1e6
        rows.append(row)
    return rows


def build_report(options: Any, parts: Sequence[Part], start_ns: int, end_ns: int) -> dict[str, Any]:
    """Merge the processes' parts into one report (see the module docstring)."""
    latency = merged(p.latency for p in parts)
    statuses = _merge_counts([p.statuses for p in parts])
    errors = _merge_counts([p.errors for p in parts])
    count = sum(statuses.values())
    if options.duration_s:
        total_ns = int((options.duration_s - options.warmup_s) * 1e9)
    else:
        total_ns = max((p.last_ns for p in parts), default=start_ns) - start_ns
    total_s = max(total_ns, 1) / 1e9
    cpu = [p.cpu_s for p in parts]
    wall_s = max(1e-9, (end_ns - start_ns) / 1e9)
    max_process_cpu = max(cpu, default=0.0) / wall_s
    report: dict[str, Any] = {
        "name": options.name,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "options": {
            "host": options.target,
            "call": options.method,
            "transport": options.transport,
            "total": options.total,
            "concurrency": options.concurrency,
            "rps": options.rps,
            "connections": options.connections,
            "duration": int(options.duration_s * 1e9),
            "timeout": int(options.timeout_s * 1e9),
            "binary": True,
            "processes": options.processes,
            "warmup": int(options.warmup_s * 1e9),
            **options.extra,
        },
        "count": count,
        "total": total_ns,
        "average": int(latency.mean_ns),
        "fastest": latency.min_ns,
        "slowest": latency.max_ns,
        "rps": count / total_s,
        "goodput": statuses.get("OK", 0) / total_s,
        "errorDistribution": errors,
        "statusCodeDistribution": statuses,
        "latencyDistribution": [
            {"percentage": pct, "latency": latency.percentile(pct)}
            for pct in PERCENTAGES
            if latency.count
        ],
        "p999": latency.percentile(99.9),
        "histogram": ghz_histogram(latency),
        "client": {
            "processes": len(parts),
            "cpu_s": sum(cpu),
            "cpu_cores": sum(cpu) / wall_s,
            "max_process_cpu": max_process_cpu,
            "saturated": max_process_cpu >= 0.9
            or (bool(options.cpus) and sum(cpu) / wall_s >= 0.9 * len(options.cpus)),
            "cpus": list(options.cpus),
        },
        "timeline": _timeline(parts, options.duration_s),
    }
    if options.rps:
        lag = merged(p.send_lag for p in parts)
        report["sendLag"] = {
            "p50_ms": lag.percentile(50) / 1e6,
            "p99_ms": lag.percentile(99) / 1e6,
            "max_ms": lag.max_ns / 1e6,
            "dropped": sum(p.dropped for p in parts),
        }
    return report


def percentile_ms(report: dict[str, Any], pct: int) -> float:
    """The ``pct`` latency of a report in ms (0.0 if the report has no OK responses)."""
    for item in report.get("latencyDistribution", []):
        if item["percentage"] == pct:
            return float(item["latency"]) / 1e6
    return 0.0


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def summary_text(report: dict[str, Any]) -> str:
    """ghz's ``--format summary`` text for ``report``."""
    lines = [
        "",
        "Summary:",
        f"  Count:\t{report['count']}",
        f"  Total:\t{_ms(report['total'])}",
        f"  Slowest:\t{_ms(report['slowest'])}",
        f"  Fastest:\t{_ms(report['fastest'])}",
        f"  Average:\t{_ms(report['average'])}",
        f"  Requests/sec:\t{report['rps']:.2f}",
        "",
        "Response time histogram:",
    ]
    top = max((b["count"] for b in report["histogram"]), default=0)
    for b in report["histogram"]:
        bar = "∎" * (int(40 * b["count"] / top) if top else 0)
        lines.append(f"  {b['mark'] * 1e3:.3f} [{b['count']}]\t|{bar}")
    lines += ["", "Latency distribution:"]
    lines += [
        f"  {d['percentage']} % in {_ms(d['latency'])} " for d in report["latencyDistribution"]
    ]
    lines += ["", "Status code distribution:"]
    lines += [
        f"  [{k}]\t{v} responses" for k, v in sorted(report["statusCodeDistribution"].items())
    ]
    if report["errorDistribution"]:
        lines += ["", "Error distribution:"]
        lines += [f"  [{v}]\t{k}" for k, v in sorted(report["errorDistribution"].items())]
    client = report["client"]
    lines += [
        "",
        f"Client: {client['processes']} process(es), {client['cpu_cores']:.2f} cores of CPU"
        + (" (SATURATED: the generator may be the bottleneck)" if client["saturated"] else ""),
    ]
    if "sendLag" in report:
        lag = report["sendLag"]
        lines.append(
            f"Send lag: p50 {lag['p50_ms']:.2f} ms, p99 {lag['p99_ms']:.2f} ms, "
            f"max {lag['max_ms']:.2f} ms, dropped {lag['dropped']}"
        )
    return "\n".join(lines) + "\n"
