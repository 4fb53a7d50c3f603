"""tensorgate's own metrics, Prometheus-style (base units, ``_total`` counters), beside TF's.

Recorded on the loop into :mod:`~gateway.observability.cells` and written by prometheus_client
(a collector over those cells, in a registry of its own):

- ``tensorgate_request_duration_seconds`` histogram {model_name, api, entrypoint, protocol}: a
  gRPC or REST call, from its handler's start to its answer; ``protocol`` is the API's
  (``tfserving``, ``v2``), ``api`` its method name in that protocol (``Predict``, ``ModelInfer``);
- ``tensorgate_requests_total`` counter {model_name, version, api, entrypoint, protocol, status}:
  the same calls, counted once each as they end, ``status`` the canonical code name (``OK``,
  ``INVALID_ARGUMENT``, ...) on either transport and ``version`` the version the call asked for
  ("" when it named none: the latest or a label);
- ``tensorgate_requests_in_flight`` gauge {entrypoint, protocol}: calls being handled now (from
  handler start to answer: waiting in a batch queue, running and being encoded), the per-pod
  signal deploy/'s autoscalers read;
- ``tensorgate_queue_wait_seconds`` histogram {model_name, version}: a request's wait in its batch
  queue;
- ``tensorgate_compute_seconds`` histogram {model_name, version}: a batch's model run, as its
  worker measured it;
- ``tensorgate_batch_size`` histogram {model_name, version}: rows per batch (padding excluded);
- ``tensorgate_requests_refused_total`` counter {model_name, reason}: ``queue_full``, ``deadline``
  (it would have waited past its deadline) or ``expired`` (dropped while queued);
- ``tensorgate_request_log_dropped_total`` counter {model_name}: sampled calls not logged because
  their log writer's queue was full (:mod:`~gateway.observability.request_log`);

plus the per-worker figures of :mod:`gateway.observability.workers` (model load time among them).
Each model version's statistics (:mod:`~gateway.observability.model_stats`) are kept beside them,
for the Open Inference Protocol's statistics extension; they are not on the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from gateway.observability.cells import Counter, Histogram, exponential_buckets
from gateway.observability.model_stats import ModelStats

SECONDS_BUCKETS = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
"""From 50 µs (a tiny model's run) to a minute."""
ROWS_BUCKETS = exponential_buckets(1, 2, 14)
"""1, 2, 4, ..., 8192 rows."""

MODEL = ("model_name", "version")


class GatewayMetrics:
    """The series the request and batch hooks record into (see the module doc)."""

    def __init__(self) -> None:
        self.request_duration = Histogram(
            ("model_name", "api", "entrypoint", "protocol"), SECONDS_BUCKETS
        )
        self.requests = Counter(
            ("model_name", "version", "api", "entrypoint", "protocol", "status")
        )
        self.in_flight: dict[tuple[str, str], int] = {}
        """(entrypoint, protocol) → calls being handled now."""
        self.queue_wait = Histogram(MODEL, SECONDS_BUCKETS)
        self.compute = Histogram(MODEL, SECONDS_BUCKETS)
        self.batch_size = Histogram(MODEL, ROWS_BUCKETS)
        self.refused = Counter(("model_name", "reason"))
        self.runs_in: dict[tuple[str, str, str], int] = {}
        """(model_name, version, runs_in) → front ends that send the version's batches to
        ``frontend`` (their own session) or to the ``workers``: 1 in a front end's own figures,
        summed over front ends like ``in_flight``."""
        self.log_dropped = Counter(("model_name",))
        self.model_stats = ModelStats()


class GatewayCollector(Collector):
    """Turns :class:`GatewayMetrics` and the pool's live figures into prometheus_client families.

    ``live``: yields the families read at scrape time (workers, shared memory, restarts).
    """

    def __init__(self, metrics: GatewayMetrics, live: Callable[[], Iterable[Metric]]) -> None:
        self.metrics = metrics
        self.live = live

    def collect(self) -> Iterator[Metric]:
        m = self.metrics
        yield _histogram(
            "tensorgate_request_duration_seconds",
            "Seconds from the start of a gRPC or REST call's handler to its answer.",
            m.request_duration,
        )
        yield _counter(
            "tensorgate_requests", "gRPC and REST calls that ended, by status.", m.requests
        )
        in_flight = GaugeMetricFamily(
            "tensorgate_requests_in_flight",
            "Calls being handled now.",
            labels=["entrypoint", "protocol"],
        )
        for (entrypoint, protocol), count in sorted(m.in_flight.items()):
            in_flight.add_metric([entrypoint, protocol], count)
        yield in_flight
        yield _histogram(
            "tensorgate_queue_wait_seconds",
            "Seconds a request waited in its batch queue before its batch was sent to a worker.",
            m.queue_wait,
        )
        yield _histogram(
            "tensorgate_compute_seconds",
            "Seconds a batch's model run took in its worker, as the worker measured it.",
            m.compute,
        )
        yield _histogram(
            "tensorgate_batch_size",
            "Rows of each batch sent to a worker (no padding).",
            m.batch_size,
        )
        yield _counter(
            "tensorgate_requests_refused",
            "Requests that left their queue without running, by reason.",
            m.refused,
        )
        runs_in = GaugeMetricFamily(
            "tensorgate_model_runs_in",
            "Front ends that run a model version's batches in the front-end process itself "
            "(runs_in=frontend) or on the worker processes (runs_in=workers).",
            labels=["model_name", "version", "runs_in"],
        )
        for labels, fronts in sorted(m.runs_in.items()):
            runs_in.add_metric(list(labels), fronts)
        yield runs_in
        yield _counter(
            "tensorgate_request_log_dropped",
            "Sampled calls not logged because their log writer's queue was full.",
            m.log_dropped,
        )
        yield from self.live()


def set_runs_in(metrics: GatewayMetrics, placed: Mapping[str, str]) -> None:
    """This process's ``tensorgate_model_runs_in``: each servable key (``<model>:<version>``)
    with where its batches run."""
    metrics.runs_in = {_runs_in_key(key, where): 1 for key, where in placed.items()}


def _runs_in_key(key: str, where: str) -> tuple[str, str, str]:
    model, version = key.rsplit(":", 1)
    return model, version, where


def _counter(name: str, documentation: str, counter: Counter) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation, labels=list(counter.label_names))
    for labels, value in counter.items():
        family.add_metric(list(labels), value)
    return family


def _histogram(name: str, documentation: str, histogram: Histogram) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=list(histogram.label_names))
    bounds = [_go_float(b) for b in histogram.bounds] + ["+Inf"]
    for labels, cell in histogram.items():
        buckets = list(zip(bounds, cell.cumulative(), strict=True))
        family.add_metric(list(labels), buckets, cell.total)
    return family


def _go_float(bound: float) -> str:
    """A bucket bound as Prometheus clients write ``le`` (``0.001``, ``1.0``, ``5e-05``)."""
    return repr(float(bound))


def registry_of(collector: Collector) -> CollectorRegistry:
    """A registry holding only ``collector`` (never prometheus_client's global one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry
