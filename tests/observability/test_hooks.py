"""What the gateway wires in: nothing at all when metrics and tracing are off; every hook when
either is on."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.config.settings import Settings
from gateway.observability.grpc_hook import GrpcObserver
from gateway.observability.hooks import Observability
from gateway.observability.metrics_page import MetricsPage
from gateway.observability.span_export import RecordExporter
from gateway.observability.tracing import Sampling, Tracing, default_resource
from gateway.serving.registry import Servable


def test_with_metrics_and_tracing_off_no_hook_is_installed() -> None:
    off = Observability.from_settings(Settings(model_base_path="/m"), env={})
    assert off.recorder is None and off.tracing is None and off.tfs is None
    assert off.grpc_observer() is None
    assert off.rest_observer() is None
    assert off.routes(pool=None) == {}  # type: ignore[arg-type]
    servable = Servable("m", 1, "m:1", "onnx", {})
    assert off.queue_observer(servable, "serving_default") is None
    assert off.placement_reporter() is None
    assert off.describe() == "Observability: no metrics page, tracing off"


def test_metrics_on_installs_the_hooks(tmp_path: Path) -> None:
    config = tmp_path / "monitoring.config"
    config.write_text("prometheus_config { enable: true }")
    without_rest = Settings(model_base_path="/m", monitoring_config_file=str(config))
    assert Observability.from_settings(without_rest, env={}).recorder is None
    settings = Settings(
        model_base_path="/m", monitoring_config_file=str(config), rest_api_port=8501
    )
    on = Observability.from_settings(settings, env={})
    assert on.tfs is not None and on.tracing is None
    assert isinstance(on.grpc_observer(), GrpcObserver)
    assert on.rest_observer() is not None
    (page,) = on.routes(pool=None).items()  # type: ignore[arg-type]  # read only when scraped
    assert page[0] == "/monitoring/prometheus/metrics" and isinstance(page[1], MetricsPage)
    servable = Servable("m", 1, "m:1", "tensorflow", {})
    observer = on.queue_observer(servable, "serving_default")
    assert observer is not None and observer.sees_untagged
    report = on.placement_reporter()
    assert report is not None and on.metrics is not None
    report({"m:1": "front_end"})
    assert on.metrics.runs_in == {("m", "1", "front_end"): 1}
    assert on.describe() == "Observability: metrics at /monitoring/prometheus/metrics, tracing off"


def test_with_tracing_alone_batches_of_unopened_calls_are_not_observed() -> None:
    resource = default_resource()
    processor = SimpleSpanProcessor(RecordExporter(InMemorySpanExporter(), resource))
    tracing = Tracing(processor, Sampling(True, 0.0), resource)
    observer = Observability(page_path=None, tracing=tracing).queue_observer(
        Servable("m", 1, "m:1", "onnx", {}), "serving_default"
    )
    assert observer is not None and not observer.sees_untagged
