"""Per-version figures → ModelStatisticsResponse and its JSON."""

from __future__ import annotations

from gateway.observability.model_stats import Duration
from gateway.v2 import statistics
from gateway.v2.statistics import BatchFigures, ModelFigures


def test_statistics_in_both_forms() -> None:
    figures = [
        ModelFigures(
            "m",
            2,
            last_inference_ms=1_700_000_000_000,
            inference_count=64,
            execution_count=2,
            success=Duration(2, 900),
            queue=Duration(2, 100),
            compute_infer=Duration(2, 500),
            batches=(BatchFigures(32, compute_infer=Duration(2, 500)),),
        )
    ]
    document = statistics.statistics_json(figures)
    (stat,) = document["model_stats"]
    assert stat["version"] == "2" and stat["inference_count"] == 64
    assert stat["inference_stats"]["success"] == {"count": 2, "ns": 900}
    assert stat["inference_stats"]["cache_hit"] == {"count": 0, "ns": 0}
    assert set(stat["inference_stats"]) == {
        "success",
        "fail",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
        "cache_hit",
        "cache_miss",
    }
    assert stat["batch_stats"] == [
        {
            "batch_size": 32,
            "compute_input": {"count": 0, "ns": 0},
            "compute_infer": {"count": 2, "ns": 500},
            "compute_output": {"count": 0, "ns": 0},
        }
    ]
    proto = statistics.statistics_response(figures).model_stats[0]
    assert (proto.name, proto.version, proto.last_inference) == ("m", "2", 1_700_000_000_000)
    assert proto.inference_stats.queue.ns == 100 and proto.batch_stats[0].batch_size == 32
    assert proto.inference_stats.HasField("cache_miss")
