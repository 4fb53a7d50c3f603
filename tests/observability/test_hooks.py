"""What the gateway wires in: nothing at all when metrics and tracing are off; the page path from
the MonitoringConfig file."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import grpc
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.config.model_config import ConfigError
from gateway.config.settings import Settings
from gateway.observability.calls import Recorder
from gateway.observability.grpc_hook import ObservingRegistry, ParentDispatch
from gateway.observability.hooks import Observability
from gateway.observability.page import DEFAULT_PATH, metrics_path
from gateway.observability.span_export import RecordExporter
from gateway.observability.tracing import Sampling, Tracing, default_resource
from gateway.serving.registry import Servable


def test_with_metrics_and_tracing_off_no_hook_is_installed() -> None:
    off = Observability.from_settings(Settings(model_base_path="/m"), env={})
    assert off.recorder is None and off.tracing is None and off.tfs is None
    server = _Server()
    assert off.grpc_registry(server) is server
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
    assert isinstance(on.grpc_registry(_Server()), ObservingRegistry)
    assert on.rest_middleware() is not None
    servable = Servable("m", 1, "m:1", "tensorflow", {})
    observer = on.queue_observer(servable, "serving_default")
    assert observer is not None and observer.sees_untagged


def test_with_tracing_alone_batches_of_unopened_calls_are_not_observed() -> None:
    resource = default_resource()
    processor = SimpleSpanProcessor(RecordExporter(InMemorySpanExporter(), resource))
    tracing = Tracing(processor, Sampling(True, 0.0), resource)
    observer = Observability(page_path=None, tracing=tracing).queue_observer(
        Servable("m", 1, "m:1", "onnx", {}), "serving_default"
    )
    assert observer is not None and not observer.sees_untagged


class _Details(NamedTuple):
    method: str
    invocation_metadata: tuple[tuple[str, str], ...]


class _Server:
    """Records what is registered on it, as a grpc.aio server would keep it."""

    def __init__(self) -> None:
        self.generic: list[grpc.GenericRpcHandler] = []
        self.registered: dict[str, dict[str, grpc.RpcMethodHandler]] = {}

    def add_generic_rpc_handlers(self, handlers: tuple[grpc.GenericRpcHandler, ...]) -> None:
        self.generic.extend(handlers)

    def add_registered_method_handlers(
        self, service: str, handlers: dict[str, grpc.RpcMethodHandler]
    ) -> None:
        self.registered[service] = dict(handlers)

    def find(self, method: str, metadata: tuple[tuple[str, str], ...] = ()) -> object:
        """The handler grpc.aio would run: a registered one first, then the generic ones."""
        service, _, name = method.lstrip("/").rpartition("/")
        found = self.registered.get(service, {}).get(name)
        if found is not None:
            return found
        for generic in self.generic:
            found = generic.service(_Details(method, metadata))
            if found is not None:
                return found
        return None


async def _echo(request: object, context: object) -> object:
    return request


PREDICT = "tensorflow.serving.PredictionService"
HEALTH = "grpc.health.v1.Health"


def _register(sampling: Sampling) -> tuple[_Server, grpc.RpcMethodHandler]:
    """A registry over a recording server, with Predict and a health Check registered on it as
    generated code registers them (generic, then by name)."""
    resource = default_resource()
    processor = SimpleSpanProcessor(RecordExporter(InMemorySpanExporter(), resource))
    tracing = Tracing(processor, sampling, resource)
    server = _Server()
    registry = ObservingRegistry(Recorder(None, None, tracing), server)
    handler = grpc.unary_unary_rpc_method_handler(_echo)
    for service, name in ((PREDICT, "Predict"), (HEALTH, "Check")):
        handlers = {name: handler}
        generic = grpc.method_handlers_generic_handler(service, handlers)
        registry.add_generic_rpc_handlers((generic,))
        registry.add_registered_method_handlers(service, handlers)
    return server, handler


def test_at_ratio_0_a_grpc_call_without_a_traceparent_gets_the_unwrapped_handler() -> None:
    server, handler = _register(Sampling(True, 0.0))
    method = f"/{PREDICT}/Predict"
    assert PREDICT not in server.registered  # found by name, it would bypass the dispatch
    assert [type(g) for g in server.generic][:1] == [ParentDispatch]
    assert server.find(method, (("user-agent", "x"),)) is handler
    parented = server.find(method, (("traceparent", f"00-{'1' * 32}-{'2' * 16}-01"),))
    assert parented is not None and parented is not handler
    assert parented.unary_unary is not _echo  # type: ignore[attr-defined]
    assert server.find(f"/{PREDICT}/Nope") is None
    assert server.find(f"/{HEALTH}/Check") is handler


def test_when_roots_are_sampled_every_call_of_an_observed_service_is_wrapped() -> None:
    server, handler = _register(Sampling(True, 1.0))
    wrapped = server.registered[PREDICT]["Predict"]
    assert wrapped is not handler and wrapped.unary_unary is not _echo
    assert wrapped.request_deserializer is handler.request_deserializer
    assert server.find(f"/{PREDICT}/Predict") is wrapped
    assert server.generic[0].service(_Details(f"/{PREDICT}/Predict", ())) is wrapped
    assert server.registered[HEALTH]["Check"] is handler
