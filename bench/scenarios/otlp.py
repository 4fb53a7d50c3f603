"""``python -m bench otlp``: tensorgate's OTLP encoder against OpenTelemetry's, on the same spans.

The records of traced Predicts (:func:`bench.measure.otlp_export.predict_records`) in export
batches of 1, 11 and 85 requests (6, 66 and 510 spans: one request, and what fills the SDK's
default export batch of 512 spans) are encoded each way, and exported to an OTLP/HTTP sink
(:mod:`bench.systems.peers.otlp_sink`, started here on the client's CPUs) each way, in rounds
(every encoding and batch once per round, the rounds repeated), each point taking at least
``point_cpu_s`` of CPU. Results: CPU µs per span, median with min–max over the rounds, in
``bench/results/<date>-otlp/``.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.cpus import layouts
from bench.measure.otlp_export import (
    ENCODERS,
    EXPORTS,
    RESOURCE,
    SPANS_PER_PREDICT,
    cpu_us_per_span,
    export_work,
    exporter,
    predict_records,
    same_request,
)
from bench.measure.points import interleaved, stats
from bench.report.otlp_report import REPORT
from bench.scenarios.runner import CACHE, run_header
from bench.systems.tracing import sink_spans, start_sink
from gateway.observability.span_records import SpanForms, span_count

log = logging.getLogger(__name__)

LIBRARIES = ("opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-common", "protobuf")


@dataclass(frozen=True)
class OtlpPlan:
    requests: tuple[int, ...] = (1, 11, 85)
    """Export batch sizes, in traced Predicts (:data:`SPANS_PER_PREDICT` spans each)."""
    rounds: int = 7
    point_cpu_s: float = 0.3
    """CPU seconds each point takes at least (as many calls as that needs)."""
    export: bool = True
    """Also export to the sink (else the encodings only)."""

    def __post_init__(self) -> None:
        if not self.requests or min(self.requests) < 1 or self.rounds < 1:
            raise ValueError("batch sizes and rounds must be ≥ 1")
        if self.point_cpu_s <= 0:
            raise ValueError("point_cpu_s must be > 0")

    def ways(self) -> tuple[str, ...]:
        return (*ENCODERS, *(EXPORTS if self.export else ()))

    def estimate_s(self) -> float:
        """Wall seconds, about (the CPU each point takes, and a share for the sink's side)."""
        return len(self.requests) * len(self.ways()) * self.rounds * self.point_cpu_s * 1.5


def point_key(spans: int, way: str) -> str:
    return f"{spans} spans · {way}"


def run(plan: OtlpPlan, out: Path, logs: Path = CACHE / "logs") -> dict[str, Any]:
    """Measure every way at every batch size in rounds; write the report into ``out`` (the
    sink's log into ``logs/<out's name>/``)."""
    began = time.monotonic()
    records = predict_records(max(plan.requests))
    forms = SpanForms(RESOURCE)
    _, client_cpus = layouts()["1-core"]
    results: dict[str, Any] = {
        "kind": "otlp",
        "run": {
            **run_header(out.name, plan),
            "libraries": {name: version(name) for name in LIBRARIES},
            "spans_per_request": SPANS_PER_PREDICT,
            "same_request": same_request(records, forms),
            "loadavg_before": list(os.getloadavg()),
        },
        "points": {},
    }
    sink = sender = None
    try:
        jobs = []
        if plan.export:
            sink, endpoint = start_sink(logs / out.name, client_cpus)
            sender = exporter(endpoint)
        for requests in plan.requests:
            batch = records[:requests]
            spans = sum(map(span_count, batch))
            for way in plan.ways():
                if way in ENCODERS:
                    work: Callable[[], object] = functools.partial(ENCODERS[way], batch, forms)
                else:
                    assert sender is not None
                    work = export_work(way, sender, batch, forms)
                job = functools.partial(_point, work, spans, plan.point_cpu_s)
                jobs.append((point_key(spans, way), job))
        measured = interleaved(jobs, plan.rounds, label="otlp {key}")
        if sink is not None:
            results["run"]["sink_spans"] = sink_spans(endpoint)
    finally:
        if sender is not None:
            sender.shutdown()  # type: ignore[no-untyped-call]
        if sink is not None:
            sink.stop()
    results["run"]["loadavg_after"] = list(os.getloadavg())
    for key, runs in measured.items():
        spans_text, way = key.split(" spans · ")
        values = [r["cpu_us_per_span"] for r in runs if "cpu_us_per_span" in r]
        point = {**stats(values), "runs": values}
        errors = [r["error"] for r in runs if "error" in r]
        if errors:
            point["errors"] = errors
        results["points"].setdefault(spans_text, {})[way] = point
    results["run"]["elapsed_s"] = time.monotonic() - began
    REPORT.write(results, out)
    return results


def _point(work: Callable[[], object], spans: int, min_cpu_s: float) -> dict[str, Any]:
    return {"cpu_us_per_span": cpu_us_per_span(work, spans, min_cpu_s)}
