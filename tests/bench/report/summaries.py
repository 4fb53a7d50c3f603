"""Summarized points as :func:`bench.measure.points.summarize` makes them, for the report's tests:
a median / min / max per key, and the rounds themselves."""

from __future__ import annotations

import statistics
from typing import Any


def stat(median: float, low: float | None = None, high: float | None = None) -> dict[str, Any]:
    """One key's summary over 3 rounds (min and max default to the median)."""
    return {"median": median, "min": low or median, "max": high or median, "n": 3}


def point(rps: float, low: float | None = None, high: float | None = None, **more: Any) -> Any:
    """A point's summary: req/s (``low``–``high``) and each of ``more`` at its median."""
    return {"rps": stat(rps, low, high), **{k: stat(v) for k, v in more.items()}}


def rounds(rps: float, **by_round: list[float | None]) -> Any:
    """A point at ``rps`` whose rounds recorded ``by_round`` (a key's value in each round, in
    order; None: a round that failed), summarized over the rounds that did."""
    count = max(len(values) for values in by_round.values())
    runs: list[dict[str, Any]] = [{"rps": rps} for _ in range(count)]
    summary = point(rps)
    for key, values in by_round.items():
        for run, value in zip(runs, values, strict=True):
            run.update({"error": "RuntimeError: failed"} if value is None else {key: value})
        counted = [v for v in values if v is not None]
        if counted:
            summary[key] = {
                "median": statistics.median(counted),
                "min": min(counted),
                "max": max(counted),
                "n": len(counted),
            }
    return {**summary, "runs": runs}
