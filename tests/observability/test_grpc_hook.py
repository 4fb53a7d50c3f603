"""The gRPC hook: observed method handlers for the services a protocol describes, registered where
the services are (recording server stand-ins show what grpc.aio would find), and the call records
they report, through a real grpc.aio server on port 0."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import grpc
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.observability.calls import Recorder
from gateway.observability.grpc_hook import CODES, ObservingRegistry, ParentDispatch
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.span_export import RecordExporter
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.tracing import Sampling, Tracing, default_resource
from gateway.transport.gate import ServiceRegistry
from gateway.transport.surface import GrpcService


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


def _never(server: ServiceRegistry) -> None:
    raise AssertionError("the tests register the handlers themselves")


def _model_of(request: Any) -> str:
    return request.decode() if isinstance(request, bytes) else ""


PREDICT = "tensorflow.serving.PredictionService"
HEALTH = "grpc.health.v1.Health"


def _register(sampling: Sampling) -> tuple[_Server, grpc.RpcMethodHandler]:
    """A registry over a recording server, with Predict and a health Check registered on it as
    generated code registers them (generic, then by name)."""
    resource = default_resource()
    processor = SimpleSpanProcessor(RecordExporter(InMemorySpanExporter(), resource))
    tracing = Tracing(processor, sampling, resource)
    server = _Server()
    described = GrpcService(PREDICT, "tfserving", _never, model_of=_model_of)
    registry = ObservingRegistry(Recorder(None, None, tracing), server, [described])
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


# -- the records of real calls ---------------------------------------------------------------------
SERVICE = "test.Service"


async def _answer(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    """``b"<model>"`` answers OK; ``b"missing"`` fails NOT_FOUND."""
    if request == b"missing":
        await context.abort(grpc.StatusCode.NOT_FOUND, "no such model")
    return request


def _rows(request: bytes) -> int:
    return len(request)


async def _calls(
    service: GrpcService, calls: Callable[[grpc.aio.Channel], Awaitable[None]]
) -> tuple[TfServingMetrics, GatewayMetrics]:
    """Serve ``_answer`` as ``service``'s methods Predict and MultiInference, observed with TF's
    metrics and tensorgate's, and make ``calls``."""
    tfs, metrics = TfServingMetrics(), GatewayMetrics()
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    registry = ObservingRegistry(Recorder(tfs, metrics, None), server, [service])
    handler = grpc.unary_unary_rpc_method_handler(_answer)
    registry.add_registered_method_handlers(
        SERVICE, {"Predict": handler, "MultiInference": handler}
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            await calls(channel)
    finally:
        await server.stop(None)
    return tfs, metrics


async def _ask(channel: grpc.aio.Channel, method: str, request: bytes) -> grpc.StatusCode:
    try:
        await channel.unary_unary(f"/{SERVICE}/{method}")(request, timeout=30)
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def test_each_call_reports_its_protocol_model_status_and_rows() -> None:
    service = GrpcService(
        SERVICE, "tfserving", _never, model_of=_model_of, rows_of={"MultiInference": _rows}
    )

    async def calls(channel: grpc.aio.Channel) -> None:
        assert await _ask(channel, "Predict", b"m") == grpc.StatusCode.OK
        assert await _ask(channel, "Predict", b"missing") == grpc.StatusCode.NOT_FOUND
        assert await _ask(channel, "MultiInference", b"abc") == grpc.StatusCode.OK
        assert await _ask(channel, "MultiInference", b"missing") == grpc.StatusCode.NOT_FOUND

    tfs, metrics = asyncio.run(_calls(service, calls))
    assert dict(tfs.request_count.items()) == {("m", "OK"): 1, ("missing", "NOT_FOUND"): 1}
    assert [labels for labels, _ in tfs.request_latency.items()] == [("m", "Predict", "GRPC")]
    assert dict(tfs.request_example_count_total.items()) == {("abc",): 3}
    durations = {labels: cell.cumulative()[-1] for labels, cell in metrics.request_duration.items()}
    assert durations == {
        ("m", "Predict", "GRPC", "tfserving"): 1,
        ("missing", "Predict", "GRPC", "tfserving"): 1,
        ("abc", "MultiInference", "GRPC", "tfserving"): 1,
        ("missing", "MultiInference", "GRPC", "tfserving"): 1,
    }
    assert metrics.in_flight[("GRPC", "tfserving")] == 0


def test_tf_serving_s_metrics_count_only_its_own_protocol_s_calls() -> None:
    service = GrpcService(SERVICE, "v2", _never, model_of=_model_of)

    async def calls(channel: grpc.aio.Channel) -> None:
        assert await _ask(channel, "Predict", b"m") == grpc.StatusCode.OK

    tfs, metrics = asyncio.run(_calls(service, calls))
    assert not tfs.request_count.values and not tfs.request_latency.cells
    assert [labels for labels, _ in metrics.request_duration.items()] == [
        ("m", "Predict", "GRPC", "v2")
    ]


@pytest.mark.parametrize("name", ["OK", "NOT_FOUND", "UNAVAILABLE"])
def test_status_code_numbers(name: str) -> None:
    assert CODES[name] == getattr(grpc.StatusCode, name).value[0]
