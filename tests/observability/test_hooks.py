"""What the gateway wires in: nothing at all when metrics and tracing are off; the page path from
the MonitoringConfig file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import NamedTuple

import grpc
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.config.model_config import ConfigError
from gateway.config.settings import Settings
from gateway.observability.calls import Recorder
from gateway.observability.grpc_hook import ObservingInterceptor
from gateway.observability.hooks import Observability
from gateway.observability.page import DEFAULT_PATH, metrics_path
from gateway.observability.span_export import RecordExporter
from gateway.observability.tracing import Sampling, Tracing, default_resource
from gateway.serving.models import Servable


def test_with_metrics_and_tracing_off_no_hook_is_installed() -> None:
    off = Observability.from_settings(Settings(model_base_path="/m"), env={})
    assert off.recorder is None and off.tracing is None and off.tfs is None
    assert off.interceptors() == []
    assert off.rest_middleware() is None
    assert off.routes(pool=None) == {}  # type: ignore[arg-type]
    servable = Servable("m", 1, "m:1", "onnx", {})
    assert off.queue_observer(servable, "serving_default") is None


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("prometheus_config { enable: true }", DEFAULT_PATH),
        ('prometheus_config { enable: true path: "/metrics" }', "/metrics"),
        ('prometheus_config { enable: false path: "/metrics" }', None),
        ("", None),
    ],
)
def test_monitoring_config_gives_the_page_path(tmp_path: Path, text: str, path: str | None) -> None:
    config = tmp_path / "monitoring.config"
    config.write_text(text)
    assert metrics_path(str(config)) == path
    assert metrics_path("") is None


def test_a_relative_page_path_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "monitoring.config"
    config.write_text('prometheus_config { enable: true path: "metrics" }')
    with pytest.raises(ConfigError, match="must start with '/'"):
        metrics_path(str(config))


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
    assert len(on.interceptors()) == 1 and on.rest_middleware() is not None
    servable = Servable("m", 1, "m:1", "tensorflow", {})
    observer = on.queue_observer(servable, "serving_default")
    assert observer is not None


class _Details(NamedTuple):
    method: str
    invocation_metadata: tuple[tuple[str, str], ...]


def test_at_ratio_0_a_grpc_call_without_a_traceparent_gets_the_unwrapped_handler() -> None:
    resource = default_resource()
    processor = SimpleSpanProcessor(RecordExporter(InMemorySpanExporter(), resource))
    tracing = Tracing(processor, Sampling(True, 0.0), resource)
    interceptor = ObservingInterceptor(Recorder(None, None, tracing))
    method = "/tensorflow.serving.PredictionService/Predict"

    async def behavior(request: object, context: object) -> object:
        return request

    handler = grpc.unary_unary_rpc_method_handler(behavior)

    async def continuation(details: object) -> grpc.RpcMethodHandler:
        return handler

    async def intercept(metadata: tuple[tuple[str, str], ...]) -> grpc.RpcMethodHandler:
        return await interceptor.intercept_service(continuation, _Details(method, metadata))

    plain = asyncio.run(intercept((("user-agent", "x"),)))
    parented = asyncio.run(intercept((("traceparent", f"00-{'1' * 32}-{'2' * 16}-01"),)))
    assert plain is handler
    assert parented is not handler and parented.unary_unary is not behavior
