"""tensorgate's own metrics as prometheus_client writes them: names, base units, ``le`` bounds as
Prometheus clients print them, the live families read at scrape time."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from gateway.observability.metrics import GatewayCollector, GatewayMetrics, registry_of


def _live() -> Iterator[Metric]:
    gauge = GaugeMetricFamily("tensorgate_live", "Read at scrape.")
    gauge.add_metric([], 7)
    yield gauge


def test_the_page_of_tensorgate_s_own_series() -> None:
    metrics = GatewayMetrics()
    metrics.request_duration.observe(("m", "Predict", "GRPC", "v2"), 0.003)
    metrics.in_flight[("GRPC", "tfserving")] = 0
    metrics.in_flight[("REST", "v2")] = 2
    metrics.queue_wait.observe(("m", "1"), 0.00005)
    metrics.batch_size.observe(("m", "1"), 3)
    metrics.refused.inc(("m", "queue_full"))
    page = generate_latest(registry_of(GatewayCollector(metrics, _live))).decode()
    lines = page.splitlines()
    assert (
        'tensorgate_request_duration_seconds_bucket{api="Predict",entrypoint="GRPC",'
        'le="0.0025",model_name="m",protocol="v2"} 0.0' in lines
    )
    assert (
        'tensorgate_request_duration_seconds_bucket{api="Predict",entrypoint="GRPC",'
        'le="0.005",model_name="m",protocol="v2"} 1.0' in lines
    )
    assert 'tensorgate_requests_in_flight{entrypoint="GRPC",protocol="tfserving"} 0.0' in lines
    assert 'tensorgate_requests_in_flight{entrypoint="REST",protocol="v2"} 2.0' in lines
    assert (
        'tensorgate_queue_wait_seconds_bucket{le="5e-05",model_name="m",version="1"} 1.0' in lines
    )
    assert 'tensorgate_batch_size_bucket{le="2.0",model_name="m",version="1"} 0.0' in lines
    assert 'tensorgate_batch_size_bucket{le="4.0",model_name="m",version="1"} 1.0' in lines
    assert 'tensorgate_requests_refused_total{model_name="m",reason="queue_full"} 1.0' in lines
    assert "tensorgate_live 7.0" in lines
    assert "tensorgate_compute_seconds" in page  # listed with no series yet


def test_a_registry_of_its_own() -> None:
    first = registry_of(GatewayCollector(GatewayMetrics(), _live))
    second = registry_of(GatewayCollector(GatewayMetrics(), _live))
    assert first is not second
    assert b"python_gc" not in generate_latest(first)  # not prometheus_client's global one
