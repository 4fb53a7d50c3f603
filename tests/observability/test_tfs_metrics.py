"""TF Serving's exposition, checked against the cases of upstream's prometheus_exporter_test.cc
and the names, labels and buckets of util.cc / batching_util.h / batching_session.cc."""

from __future__ import annotations

import pytest

from gateway.observability.call_record import Call
from gateway.observability.cells import Counter, Histogram, exponential_buckets
from gateway.observability.tfs_metrics import (
    LATENCY_BUCKETS,
    QUEUING_BUCKETS,
    Family,
    TfServingMetrics,
    metric_name,
)


def _page(*families: Family) -> str:
    metrics = TfServingMetrics()
    metrics.families = list(families)
    return metrics.render()


def test_counter_as_upstream_test() -> None:
    counter = Counter(("name",))
    counter.inc(("abc",), 2)
    assert _page(Family("/test/path/total", counter)) == (
        '# TYPE :test:path:total counter\n:test:path:total{name="abc"} 2\n'
    )


def test_histogram_as_upstream_test() -> None:
    histogram = Histogram(("status",), exponential_buckets(1, 2, 10), "lt")
    for value in (2, 20, 200):
        histogram.observe(("good",), value)
    expected = [
        "# TYPE :test:path:histogram histogram",
        ':test:path:histogram_bucket{status="good",le="1"} 0',
        ':test:path:histogram_bucket{status="good",le="2"} 0',
        ':test:path:histogram_bucket{status="good",le="4"} 1',
        ':test:path:histogram_bucket{status="good",le="8"} 1',
        ':test:path:histogram_bucket{status="good",le="16"} 1',
        ':test:path:histogram_bucket{status="good",le="32"} 2',
        ':test:path:histogram_bucket{status="good",le="64"} 2',
        ':test:path:histogram_bucket{status="good",le="128"} 2',
        ':test:path:histogram_bucket{status="good",le="256"} 3',
        ':test:path:histogram_bucket{status="good",le="512"} 3',
        ':test:path:histogram_bucket{status="good",le="+Inf"} 3',
        ':test:path:histogram_sum{status="good"} 222',
        ':test:path:histogram_count{status="good"} 3',
    ]
    assert _page(Family("/test/path/histogram", histogram)) == "\n".join(expected) + "\n"


def test_label_values_and_names_are_sanitized_as_upstream() -> None:
    counter = Counter(("name",))
    counter.inc(('"abc\\"',), 2)
    assert ':test:path:total{name="\\"abc\\\\\\""} 2' in _page(Family("/test/path/total", counter))
    assert metric_name("0/path-total_count") == "_0:path:total_count"


def test_unlabelled_series_print_empty_braces_as_upstream() -> None:
    counter = Counter(())
    counter.inc(())
    histogram = Histogram((), (1.0,), "lt")
    histogram.observe((), 0.5)
    assert _page(Family("/c", counter), Family("/h", histogram)) == (
        "# TYPE :c counter\n:c{} 1\n"
        '# TYPE :h histogram\n:h_bucket{le="1"} 1\n:h_bucket{le="+Inf"} 1\n:h_sum{} 0.5\n'
        ":h_count{} 1\n"
    )


def test_latency_buckets_are_10_times_1_8_to_the_i_printed_with_six_digits() -> None:
    assert len(LATENCY_BUCKETS) == 33
    assert LATENCY_BUCKETS[:4] == (10, 18, 32.4, 58.32)
    metrics = TfServingMetrics()
    metrics.request_latency.observe(("m", "Predict", "GRPC"), 1_234_567)
    page = metrics.render()
    assert 'le="188.957"} 0' in page
    assert 'le="708235"} 0' in page
    assert 'le="1.27482e+06"} 1' in page
    assert 'le="1.47476e+09"} 1' in page
    labels = 'model_name="m",API="Predict",entrypoint="GRPC"'
    assert f":tensorflow:serving:request_latency_sum{{{labels}}} 1.23457e+06" in page
    assert len(QUEUING_BUCKETS) == 52 and QUEUING_BUCKETS[0] == 100


def test_fresh_page_lists_upstreams_metrics_in_path_order_and_batch_sizes_on_first_use() -> None:
    metrics = TfServingMetrics()
    assert metrics.render().splitlines() == [
        "# TYPE :tensorflow:serving:batching_session:queuing_latency histogram",
        "# TYPE :tensorflow:serving:batching_session:wrapped_run_count counter",
        "# TYPE :tensorflow:serving:model_warmup_latency histogram",
        "# TYPE :tensorflow:serving:model_warmup_records_read counter",
        "# TYPE :tensorflow:serving:request_count counter",
        "# TYPE :tensorflow:serving:request_example_count_total counter",
        "# TYPE :tensorflow:serving:request_example_counts histogram",
        "# TYPE :tensorflow:serving:request_latency histogram",
        "# TYPE :tensorflow:serving:runtime_latency histogram",
    ]
    metrics.padding_size.observe(("8",), 3)
    assert "# TYPE :tensorflow:serving:batching_session:padding_size histogram" in metrics.render()


def test_counts_by_model_and_status() -> None:
    metrics = TfServingMetrics()
    for status in ("OK", "OK", "INVALID_ARGUMENT"):
        metrics.request_count.inc(("mlp", status))
    metrics.request_count.inc(("", "NOT_FOUND"))
    lines = [line for line in metrics.render().splitlines() if "request_count{" in line]
    assert lines == [
        ':tensorflow:serving:request_count{model_name="",status="NOT_FOUND"} 1',
        ':tensorflow:serving:request_count{model_name="mlp",status="INVALID_ARGUMENT"} 1',
        ':tensorflow:serving:request_count{model_name="mlp",status="OK"} 2',
    ]


def _record(
    metrics: TfServingMetrics, entrypoint: str, api: str, status: str = "OK", **kw: object
) -> None:
    call = Call("tfserving", api, entrypoint, 0.0, model="m", status=status, elapsed_s=0.002)
    for name, value in kw.items():
        setattr(call, name, value)
    metrics.record_call(call, call.model)


@pytest.mark.parametrize(
    ("entrypoint", "api", "latency_api"),
    [
        ("GRPC", "Predict", "Predict"),
        ("GRPC", "Classify", "Classify"),
        ("GRPC", "Regress", "Regress"),
        ("REST", "Predict", "predict"),
        ("REST", "Classify", "classify"),
        ("REST", "Regress", "regress"),
        ("REST", "GetModelStatus", ""),
        ("REST", "GetModelMetadata", ""),
        ("REST", "unknown", ""),
    ],
)
def test_call_records_count_as_upstream_s_transports_do(
    entrypoint: str, api: str, latency_api: str
) -> None:
    metrics = TfServingMetrics()
    _record(metrics, entrypoint, api)
    _record(metrics, entrypoint, api, "NOT_FOUND")
    assert dict(metrics.request_count.items()) == {("m", "OK"): 1, ("m", "NOT_FOUND"): 1}
    ((labels, cell),) = metrics.request_latency.items()
    assert labels == ("m", latency_api, entrypoint)
    assert (cell.total, cell.cumulative()[-1]) == (2000, 1)  # microseconds, the OK call only


@pytest.mark.parametrize("api", ["GetModelMetadata", "GetModelStatus", "HandleReloadConfigRequest"])
def test_grpc_calls_upstream_does_not_count_are_not_counted(api: str) -> None:
    metrics = TfServingMetrics()
    _record(metrics, "GRPC", api)
    assert not metrics.request_count.values and not metrics.request_latency.cells


def test_a_multi_inference_that_succeeded_counts_its_examples_only() -> None:
    metrics = TfServingMetrics()
    _record(metrics, "GRPC", "MultiInference", rows=3)
    _record(metrics, "GRPC", "MultiInference", "INVALID_ARGUMENT", rows=5)
    assert dict(metrics.request_example_count_total.items()) == {("m",): 3}
    assert not metrics.request_count.values


def test_only_tf_serving_s_own_calls_count() -> None:
    metrics = TfServingMetrics()
    metrics.record_call(Call("v2", "Predict", "GRPC", 0.0, model="m"), "m")
    assert not metrics.request_count.values
