"""A front end's metrics as plain data, and their sum over front ends: one page for the server.

Each front end records its own calls and batches (:mod:`gateway.observability`); a scrape of the
metrics page, whichever front end answers it, shows the whole server's figures exactly once. The
supervisor asks every front end for :func:`dump` of its series, adds them up with :func:`merge`
into fresh series, adds its own (warmups) and the workers' figures, and writes the page with the
one-process writers (TF Serving's exposition format, byte for byte). The rule, per identical
metric name and label values:

- counters: summed; histograms: each bucket's count, the sum and the count summed (the bounds
  are the same in every process: they are constants of the code);
- gauges: summed too — ``tensorgate_requests_in_flight`` (calls being handled now, over every
  front end), ``tensorgate_model_runs_in`` (front ends placing a version's runs there) and
  ``tensorgate_shm_bytes_in_use`` / ``tensorgate_shm_capacity_bytes`` (over the worker's
  channels: the supervisor's and one per front end); the workers' own gauges come from the
  workers, once.

A dump is ``{"tfs": {series: ...}, "gateway": {series: ...}, "in_flight": [[entrypoint,
protocol, calls], ...], "runs_in": [[model, version, runs_in, front ends], ...], "shm":
[[worker, area, bytes in use, capacity], ...]}``, each counter as ``[[labels, value], ...]`` and
each histogram as ``[[labels, counts per bucket, total], ...]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.observability.cells import Cell, Counter, Histogram
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.workers import ShmUse


def dump(
    tfs: TfServingMetrics | None, metrics: GatewayMetrics | None, shm: ShmUse
) -> dict[str, Any]:
    """One process's figures as plain data (see the module doc)."""
    return {
        "tfs": {} if tfs is None else _series_of(tfs),
        "gateway": {} if metrics is None else _series_of(metrics),
        "in_flight": []
        if metrics is None
        else [[e, p, n] for (e, p), n in sorted(metrics.in_flight.items())],
        "runs_in": []
        if metrics is None
        else [[m, v, w, n] for (m, v, w), n in sorted(metrics.runs_in.items())],
        "shm": [[w, a, used, cap] for (w, a), (used, cap) in sorted(shm.items())],
    }


def merge(
    tfs: TfServingMetrics, metrics: GatewayMetrics, figures: Mapping[str, Any], shm: ShmUse
) -> None:
    """Add one process's dumped ``figures`` into ``tfs``, ``metrics`` and ``shm``."""
    _add_series(tfs, figures["tfs"])
    _add_series(metrics, figures["gateway"])
    for entrypoint, protocol, calls in figures["in_flight"]:
        key = (str(entrypoint), str(protocol))
        metrics.in_flight[key] = metrics.in_flight.get(key, 0) + int(calls)
    for model, version, where, fronts in figures["runs_in"]:
        placed = (str(model), str(version), str(where))
        metrics.runs_in[placed] = metrics.runs_in.get(placed, 0) + int(fronts)
    for worker, area, used, capacity in figures["shm"]:
        was_used, was_capacity = shm.get((str(worker), str(area)), (0, 0))
        shm[(str(worker), str(area))] = (was_used + int(used), was_capacity + int(capacity))


def _series_of(owner: object) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, series in vars(owner).items():
        if isinstance(series, Counter):
            out[name] = [[list(labels), value] for labels, value in series.items()]
        elif isinstance(series, Histogram):
            out[name] = [[list(labels), cell.counts, cell.total] for labels, cell in series.items()]
    return out


def _add_series(owner: object, dumped: Mapping[str, Any]) -> None:
    series_by_name = vars(owner)
    for name, rows in dumped.items():
        series = series_by_name.get(name)
        if isinstance(series, Counter):
            for labels, value in rows:
                series.inc(tuple(labels), value)
        elif isinstance(series, Histogram):
            for labels, counts, total in rows:
                _add_cell(series, tuple(labels), counts, total)


def _add_cell(
    histogram: Histogram, labels: tuple[str, ...], counts: list[int], total: float
) -> None:
    if len(counts) != len(histogram.bounds) + 1:
        raise ValueError(f"a histogram dump of {len(counts)} buckets for {histogram.label_names}")
    cell = histogram.cells.get(labels)
    if cell is None:
        cell = histogram.cells[labels] = Cell([0] * len(counts))
    for i, count in enumerate(counts):
        cell.counts[i] += int(count)
    cell.total += float(total)
