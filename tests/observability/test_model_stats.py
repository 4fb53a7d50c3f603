"""Each model version's statistics, as the batch queues' observer keeps them beside the metrics,
and TF Serving's runtime_latency counted only for TF Serving's own calls."""

from __future__ import annotations

from gateway.observability.batches import QueueLabels, QueueObserver
from gateway.observability.call_record import Call
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.model_stats import Duration, ModelStats, VersionStats, record_run
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.worker_channel.lease import RunResult

LABELS = QueueLabels("m", "3", "ONNX", 1, None)


def test_a_run_counts_its_members_rows_and_compute() -> None:
    stats = VersionStats()
    record_run(stats, [0.5, 0.25], 0.125, rows=3, executed_rows=4, compute_us=100.0)
    assert stats.inference_count == 3 and stats.execution_count == 1
    assert stats.success == Duration(2, 1_000_000_000)  # (0.5 + 0.125) + (0.25 + 0.125) s
    assert stats.compute_infer == Duration(2, 200_000)  # each member: the run's 100 µs
    assert stats.batches == {4: Duration(1, 100_000)}
    assert stats.fail == Duration() and stats.last_inference_ms > 0
    record_run(stats, [0.5], 0.5, rows=1, executed_rows=1, compute_us=None)
    assert stats.fail == Duration(1, 1_000_000_000)
    assert stats.inference_count == 3 and stats.execution_count == 1


def test_versions_are_kept_apart_and_read_without_creating() -> None:
    kept = ModelStats()
    kept.of("m", "1").inference_count = 5
    assert kept.get("m", "1").inference_count == 5
    assert kept.get("m", "2") == VersionStats()
    assert list(kept.versions) == [("m", "1")]


def test_the_queue_observer_feeds_its_version_s_statistics() -> None:
    metrics = GatewayMetrics()
    observer = QueueObserver(LABELS, None, metrics, None)
    note = observer.on_batch([None, None], [0.25, 0.5], [1, 2], 3)
    assert note is not None
    note.done(RunResult({}, compute_us=50.0))
    stats = metrics.model_stats.get("m", "3")
    assert stats.queue == Duration(2, 750_000_000)
    assert stats.inference_count == 3 and stats.execution_count == 1
    assert stats.compute_infer == Duration(2, 100_000)
    assert stats.success.count == 2 and stats.batches == {3: Duration(1, 50_000)}
    failed = observer.on_batch([None], [0.0], [1], 1)
    assert failed is not None
    failed.done(None)
    assert stats.fail.count == 1 and stats.execution_count == 1


def test_runtime_latency_is_tf_serving_s_own() -> None:
    """A V2 call's run is not in TF Serving's runtime_latency, whatever its method's name."""
    tfs = TfServingMetrics()
    observer = QueueObserver(LABELS, tfs, GatewayMetrics(), None)
    calls = [Call("tfserving", "Predict", "GRPC", 0.0), Call("v2", "Predict", "GRPC", 0.0)]
    note = observer.on_batch(calls, [0.0, 0.0], [1, 1], 2)
    assert note is not None
    note.done(RunResult({}, compute_us=1.0))
    assert [(labels, cell.cumulative()[-1]) for labels, cell in tfs.runtime_latency.items()] == [
        (("m", "Predict", "ONNX"), 1)
    ]
