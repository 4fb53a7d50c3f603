"""TF Serving's own metrics, named, labelled, bucketed and written exactly as TF Serving does.

Sources (tensorflow/serving): ``servables/tensorflow/util.cc`` (request_count, request_latency,
runtime_latency, request_example_counts, request_example_count_total),
``batching/batching_session.cc`` and ``batching/batching_util.h`` (queuing_latency,
wrapped_run_count, input_batch_size, processed_batch_size, padding_size),
``servables/tensorflow/saved_model_warmup_util.cc`` (model_warmup_latency,
model_warmup_records_read), and ``util/prometheus_exporter.cc`` for the page. The page has, per
metric in order of its TF path: ``# TYPE <name> counter|histogram`` (no ``# HELP``), the name being
the path with every character outside ``[a-zA-Z0-9_]`` turned into ``:``
(``/tensorflow/serving/request_count`` → ``:tensorflow:serving:request_count``; no ``_total``);
counter lines ``name{l="v",...} <int>``; histogram lines ``name_bucket{l="v",...,le="<bound>"}
<cumulative>`` (bounds and sums printed like C's ``%g``, 6 significant digits; the last bucket
``+Inf``), ``name_sum{...}`` and ``name_count{...}``. Label values escape ``\\`` and ``"`` only.

Metrics upstream registers at program start are always listed (a ``# TYPE`` line even with no
samples); the three batch-size metrics of ``batching_util.h`` appear on first use, as upstream.

The request metrics are an output format of the neutral call records
(:meth:`TfServingMetrics.record_call`), for the calls of TF Serving's own API (protocol
:data:`TF_SERVING`), as its transports record them: over gRPC (``prediction_service_impl.cc``),
``request_count`` {model_name, status} and, when OK, ``request_latency`` {model_name, API,
entrypoint="GRPC"} for Predict, Classify and Regress only (nothing for GetModelMetadata or
MultiInference at this level; a successful MultiInference records its example count, as its
``multi_inference.cc``); over REST (``http_server.cc``), ``request_count`` for every call under
``/v1/`` and, when OK, ``request_latency`` with ``API`` the verb as upstream's URL regex captures
it (``predict``, ``classify``, ``regress``; empty for status and metadata GETs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gateway.observability.call_record import Call
from gateway.observability.cells import (
    DEFER_LIMIT,
    Counter,
    Histogram,
    Labels,
    exponential_buckets,
)

LATENCY_BUCKETS = exponential_buckets(10, 1.8, 33)
"""Microseconds: 10 × 1.8^i, 33 bounds (~20 minutes), upstream's request/runtime/warmup latency."""
EXAMPLE_BUCKETS = exponential_buckets(1, 2, 15)
BATCH_SIZE_BUCKETS = exponential_buckets(1, 2, 14)
QUEUING_BUCKETS = exponential_buckets(100, 1.2, 52)
"""Microseconds: 100 × 1.2^i, 52 bounds (~1 s), upstream's batching queuing latency."""

PREFIX = "/tensorflow/serving/"

TF_SERVING = "tfserving"
"""The protocol whose calls these metrics count (TF Serving's own API)."""
GRPC_COUNTED = frozenset({"Predict", "Classify", "Regress"})
"""The gRPC methods upstream counts in ``request_count`` and ``request_latency``."""
REST_APIS = {"Predict": "predict", "Classify": "classify", "Regress": "regress"}
"""The REST ``API`` label of a call's method (any other method: "")."""
RUNTIME_APIS = frozenset({"Predict", "Classify", "Regress"})
"""The APIs TF Serving records ``runtime_latency`` for (its predict/classifier/regressor)."""


@dataclass
class Family:
    """One TF metric: its path, kind, series, and whether it is listed before first use."""

    path: str
    series: Counter | Histogram
    eager: bool = True

    @property
    def kind(self) -> Literal["counter", "histogram"]:
        return "counter" if isinstance(self.series, Counter) else "histogram"


class TfServingMetrics:
    """Every TF Serving metric tensorgate records (each attribute is a series to record into)."""

    def __init__(self) -> None:
        self.request_count = Counter(("model_name", "status"))
        self.request_latency = _latency(("model_name", "API", "entrypoint"))
        self.runtime_latency = _latency(("model_name", "API", "runtime"))
        self.request_example_counts = Histogram(("model",), EXAMPLE_BUCKETS, "lt")
        self.request_example_count_total = Counter(("model",))
        self.queuing_latency = Histogram(("thread_pool_name",), QUEUING_BUCKETS, "lt")
        self.wrapped_run_count = Counter(())
        self.input_batch_size = Histogram((), BATCH_SIZE_BUCKETS, "lt")
        self.processed_batch_size = Histogram((), BATCH_SIZE_BUCKETS, "lt")
        self.padding_size = Histogram(("execution_batch_size",), BATCH_SIZE_BUCKETS, "lt")
        self.model_warmup_latency = _latency(("model_path", "status"))
        self.model_warmup_records_read = Counter(("model_path", "status"))
        batching = PREFIX + "batching_session/"
        self.families = sorted(
            [
                Family(PREFIX + "request_count", self.request_count),
                Family(PREFIX + "request_latency", self.request_latency),
                Family(PREFIX + "runtime_latency", self.runtime_latency),
                Family(PREFIX + "request_example_counts", self.request_example_counts),
                Family(PREFIX + "request_example_count_total", self.request_example_count_total),
                Family(batching + "queuing_latency", self.queuing_latency),
                Family(batching + "wrapped_run_count", self.wrapped_run_count),
                Family(batching + "input_batch_size", self.input_batch_size, eager=False),
                Family(batching + "processed_batch_size", self.processed_batch_size, eager=False),
                Family(batching + "padding_size", self.padding_size, eager=False),
                Family(PREFIX + "model_warmup_latency", self.model_warmup_latency),
                Family(PREFIX + "model_warmup_records_read", self.model_warmup_records_read),
            ],
            key=lambda family: family.path,
        )

    def record_call(self, call: Call, model: str) -> None:
        """The request metrics of one ended call (see the module doc), labelled ``model``
        (the call's model when it is served, else a fixed word)."""
        if call.protocol != TF_SERVING:
            return
        if call.entrypoint == "REST":
            api = REST_APIS.get(call.api, "")
        elif call.api in GRPC_COUNTED:
            api = call.api
        else:
            if call.api == "MultiInference" and call.status == "OK" and call.rows is not None:
                self.request_example_counts.observe((model,), call.rows)
                self.request_example_count_total.inc((model,), call.rows)
            return
        pending = self.request_count.pending
        pending.append((model, call.status))
        if call.status == "OK":
            labels = (model, api, call.entrypoint)
            self.request_latency.pending.append((labels, int(call.elapsed_s * 1e6)))
        if len(pending) > DEFER_LIMIT:
            self.request_count.fold()
            self.request_latency.fold()

    def record_warmup(self, model_path: str, status: str, micros: float, records: int) -> None:
        """One model warmup (upstream's ``status.ToString()``: ``OK`` or ``<CODE>: message``)."""
        self.model_warmup_latency.observe((model_path, status), micros)
        self.model_warmup_records_read.inc((model_path, status), records)

    def render(self) -> str:
        """The page, as ``PrometheusExporter::GeneratePage`` writes it."""
        lines: list[str] = []
        for family in self.families:
            series = family.series
            if not family.eager and not (
                series.values if isinstance(series, Counter) else series.cells
            ):
                continue
            name = metric_name(family.path)
            lines.append(f"# TYPE {name} {family.kind}")
            if isinstance(series, Counter):
                for labels, value in series.items():
                    lines.append(f"{name}{{{_labels(series.label_names, labels)}}} {int(value)}")
            else:
                lines.extend(_histogram_lines(name, series))
        return "\n".join(lines) + "\n"


def _latency(label_names: Labels) -> Histogram:
    return Histogram(label_names, LATENCY_BUCKETS, "lt")


def metric_name(path: str) -> str:
    """Upstream's ``GetPrometheusMetricName``."""
    name = re.sub(r"[^a-zA-Z0-9_]", ":", path)
    return f"_{name}" if name[:1].isdigit() else name


def _value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _labels(names: Labels, values: Labels) -> str:
    return ",".join(f'{name}="{_value(value)}"' for name, value in zip(names, values, strict=True))


def g6(number: float) -> str:
    """A double as ``absl::StrCat`` prints it (``%g``: 6 significant digits)."""
    return f"{number:g}"


def _histogram_lines(name: str, histogram: Histogram) -> list[str]:
    lines = []
    bounds = [g6(b) for b in histogram.bounds] + ["+Inf"]
    for labels, cell in histogram.items():
        text = _labels(histogram.label_names, labels)
        prefix = f"{name}_bucket{{{text}{',' if text else ''}"
        cumulative = cell.cumulative()
        for bound, count in zip(bounds, cumulative, strict=True):
            lines.append(f'{prefix}le="{bound}"}} {count}')
        lines.append(f"{name}_sum{{{text}}} {g6(cell.total)}")
        lines.append(f"{name}_count{{{text}}} {cumulative[-1]}")
    return lines
