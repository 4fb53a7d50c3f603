"""Triton's statistics extension: per-version figures → ``ModelStatisticsResponse`` and its JSON.

The figures are plain data (:class:`ModelFigures`), made by :func:`figures` from what the batch
queues' observers keep per model version while metrics are on
(:mod:`gateway.observability.model_stats`: without ``--monitoring_config_file``'s Prometheus page,
every figure is 0); durations are cumulative counts and nanoseconds. ``queue`` is the wait in the
batch queue, ``compute_infer`` the worker's run, ``success`` / ``fail`` run from a request's
enqueueing to its batch's end, and for the requests of every protocol (TF Serving's API too).
Figures tensorgate does not keep are 0: ``compute_input`` and ``compute_output`` (its decode and
encode are timed only in traces), cache hits and misses (no response cache); memory usage and
decoupled response statistics are empty.

REST (``GET /v2/models[/{m}[/versions/{v}]]/stats``)::

    {"model_stats": [{"name": "mlp", "version": "2", "last_inference": 1764000000000,
      "inference_count": 64, "execution_count": 2,
      "inference_stats": {"success": {"count": 2, "ns": 910000}, "fail": {"count": 0, "ns": 0},
                          "queue": {...}, "compute_input": {...}, "compute_infer": {...},
                          "compute_output": {...}, "cache_hit": {...}, "cache_miss": {...}},
      "response_stats": {},
      "batch_stats": [{"batch_size": 32, "compute_input": {...}, "compute_infer": {...},
                       "compute_output": {...}}],
      "memory_usage": []}]}
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway.observability import model_stats
from gateway.observability.model_stats import Duration
from gateway.v2 import version_strings


@dataclass(frozen=True)
class BatchFigures:
    """The runs of one batch size."""

    batch_size: int
    compute_input: Duration = field(default_factory=Duration)
    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)


@dataclass(frozen=True)
class ModelFigures:
    """One model version's figures since start (see the module docstring)."""

    name: str
    version: int
    last_inference_ms: int = 0
    """Milliseconds since the epoch of the last request; 0: none yet."""
    inference_count: int = 0
    """Successful inferences, each batch row counted (a request of batch 64 counts 64)."""
    execution_count: int = 0
    """Model runs (a batch of many requests counts 1)."""
    success: Duration = field(default_factory=Duration)
    fail: Duration = field(default_factory=Duration)
    queue: Duration = field(default_factory=Duration)
    compute_input: Duration = field(default_factory=Duration)
    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)
    batches: tuple[BatchFigures, ...] = ()


def figures(model: str, version: int, stats: model_stats.VersionStats | None) -> ModelFigures:
    """One version's figures from what is kept of it (None: nothing is kept, all 0)."""
    if stats is None:
        return ModelFigures(model, version)
    return ModelFigures(
        model,
        version,
        last_inference_ms=stats.last_inference_ms,
        inference_count=stats.inference_count,
        execution_count=stats.execution_count,
        success=_kept(stats.success),
        fail=_kept(stats.fail),
        queue=_kept(stats.queue),
        compute_infer=_kept(stats.compute_infer),
        batches=tuple(
            BatchFigures(size, compute_infer=_kept(stats.batches[size]))
            for size in sorted(stats.batches)
        ),
    )


def _kept(duration: Duration) -> Duration:
    """A copy: the kept one goes on counting."""
    return Duration(duration.count, duration.ns)


_INFER_FIELDS = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")
_CACHE_FIELDS = ("cache_hit", "cache_miss")
_BATCH_FIELDS = ("compute_input", "compute_infer", "compute_output")


def statistics_response(figures: Iterable[ModelFigures]) -> pb.ModelStatisticsResponse:
    response = pb.ModelStatisticsResponse()
    for model in figures:
        entry = response.model_stats.add(
            name=model.name,
            version=version_strings.version_string(model.version),
            last_inference=model.last_inference_ms,
            inference_count=model.inference_count,
            execution_count=model.execution_count,
        )
        entry.inference_stats.SetInParent()
        for name in _INFER_FIELDS:
            duration: Duration = getattr(model, name)
            getattr(entry.inference_stats, name).MergeFrom(
                pb.StatisticDuration(count=duration.count, ns=duration.ns)
            )
        for name in _CACHE_FIELDS:
            getattr(entry.inference_stats, name).SetInParent()
        for batch in model.batches:
            stats = entry.batch_stats.add(batch_size=batch.batch_size)
            for name in _BATCH_FIELDS:
                duration = getattr(batch, name)
                getattr(stats, name).MergeFrom(
                    pb.StatisticDuration(count=duration.count, ns=duration.ns)
                )
    return response


def _duration(duration: Duration) -> dict[str, int]:
    return {"count": duration.count, "ns": duration.ns}


def statistics_json(figures: Iterable[ModelFigures]) -> dict[str, Any]:
    stats = []
    for model in figures:
        inference = {name: _duration(getattr(model, name)) for name in _INFER_FIELDS}
        inference.update({name: _duration(Duration()) for name in _CACHE_FIELDS})
        stats.append(
            {
                "name": model.name,
                "version": version_strings.version_string(model.version),
                "last_inference": model.last_inference_ms,
                "inference_count": model.inference_count,
                "execution_count": model.execution_count,
                "inference_stats": inference,
                "response_stats": {},
                "batch_stats": [
                    {
                        "batch_size": batch.batch_size,
                        **{name: _duration(getattr(batch, name)) for name in _BATCH_FIELDS},
                    }
                    for batch in model.batches
                ],
                "memory_usage": [],
            }
        )
    return {"model_stats": stats}
