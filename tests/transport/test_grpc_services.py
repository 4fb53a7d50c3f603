"""Every gRPC method's chain, as :func:`register` builds it (observation, gate, error rule,
servicer), on a real grpc.aio server (port 0); the handlers :func:`unary` makes; and which
handler a call finds when only a traced call is observed (a recording server stand-in)."""

from __future__ import annotations

from typing import Any, NamedTuple

import grpc
import pytest
from grpc_health.v1 import health_pb2
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.errors import NotFound
from gateway.observability.calls import Recorder
from gateway.observability.grpc_hook import GrpcObserver
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.span_export import RecordExporter
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.tracing import Sampling, Tracing, default_resource
from gateway.transport.auth import BearerTokens
from gateway.transport.gate import Gate, MethodHandler
from gateway.transport.grpc_services import ParentDispatch, register, unary
from gateway.transport.surface import GrpcService

SERVICE = "test.Models"
Request, Response = health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse
TOKEN = (("authorization", "Bearer secret"),)


class _Servicer:
    """``Predict`` answers a message, ``Classify`` wire bytes; the model ``missing`` is NOT_FOUND,
    raised for the error rule to map."""

    async def Predict(self, request: Any, context: Any) -> Any:
        if request.service == "missing":
            raise NotFound("no such model")
        return Response(status=Response.SERVING)

    async def Classify(self, request: Any, context: Any) -> bytes:
        return Response(status=Response.NOT_SERVING).SerializeToString()


def _service() -> GrpcService:
    servicer = _Servicer()
    handlers = {
        "Predict": unary(servicer.Predict, Request, Response),
        "Classify": unary(servicer.Classify, Request, bytes),
    }
    return GrpcService(SERVICE, "tfserving", handlers, bounded=True, model_of=_model_of)


def _model_of(request: Any) -> str:
    return str(getattr(request, "service", ""))


async def _serve_and_call(gate: Gate, tfs: TfServingMetrics) -> dict[str, grpc.StatusCode]:
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    recorder = Recorder(tfs, GatewayMetrics(), None)
    recorder.models_changed(["m", "missing", "refused"])
    register(server, [_service()], gate, GrpcObserver(recorder))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    codes: dict[str, grpc.StatusCode] = {}
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            check = channel.unary_unary(
                f"/{SERVICE}/Predict",
                request_serializer=Request.SerializeToString,
                response_deserializer=Response.FromString,
            )
            calls = {
                "served": ("m", TOKEN),
                "servicer error": ("missing", TOKEN),
                "refused by the gate": ("refused", ()),
            }
            for name, (model, metadata) in calls.items():
                try:
                    await check(Request(service=model), metadata=metadata, timeout=30)
                    codes[name] = grpc.StatusCode.OK
                except grpc.aio.AioRpcError as error:
                    codes[name] = error.code()
            encoded = channel.unary_unary(
                f"/{SERVICE}/Classify",
                request_serializer=Request.SerializeToString,
                response_deserializer=Response.FromString,
            )
            answer = await encoded(Request(service="m"), metadata=TOKEN, timeout=30)
            assert answer.status == Response.NOT_SERVING  # wire bytes, sent as they are
    finally:
        await server.stop(None)
    return codes


async def test_observation_records_the_gate_s_refusals_and_the_error_rule_s_codes() -> None:
    """The order of the chain: observation outside the gate (a refused call is recorded with the
    gate's code), the error rule inside observation (a servicer's error is recorded with the code
    it maps to, not UNKNOWN)."""
    tfs = TfServingMetrics()
    gate = Gate(auth=BearerTokens(["secret"]), max_concurrent=1)
    codes = await _serve_and_call(gate, tfs)
    assert codes == {
        "served": grpc.StatusCode.OK,
        "servicer error": grpc.StatusCode.NOT_FOUND,
        "refused by the gate": grpc.StatusCode.UNAUTHENTICATED,
    }
    assert dict(tfs.request_count.items()) == {
        ("m", "OK"): 2,
        ("missing", "NOT_FOUND"): 1,
        ("refused", "UNAUTHENTICATED"): 1,
    }
    assert gate.in_flight == 0


def test_unary_handlers_decode_the_request_and_send_wire_bytes_as_they_are() -> None:
    async def method(request: Any, context: Any) -> Any: ...

    message = unary(method, Request, Response)
    assert message.request_deserializer(Request(service="m").SerializeToString()).service == "m"
    assert message.response_serializer(Response(status=Response.SERVING)) == b"\x08\x01"
    assert message.unary_unary is method and not message.request_streaming
    assert unary(method, Request, bytes).response_serializer is None  # grpc sends bytes as is


# -- which handler a call finds ------------------------------------------------------------------
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


class _Unchecked(Gate):
    """A gate that leaves handlers as they are (the gate's checks have their own tests)."""

    def wrap(
        self, service: str, method: str, handler: MethodHandler, *, bounded: bool
    ) -> MethodHandler:
        return handler


async def _echo(request: object, context: object) -> object:
    return request


PREDICT = "tensorflow.serving.PredictionService"
HEALTH = "grpc.health.v1.Health"


def _register(sampling: Sampling) -> tuple[_Server, grpc.RpcMethodHandler]:
    """Predict (observed) and a health Check registered, traced at ``sampling``."""
    resource = default_resource()
    processor = SimpleSpanProcessor(RecordExporter(InMemorySpanExporter(), resource))
    observer = GrpcObserver(Recorder(None, None, Tracing(processor, sampling, resource)))
    server: Any = _Server()
    handler = grpc.unary_unary_rpc_method_handler(_echo)
    services = [
        GrpcService(PREDICT, "tfserving", {"Predict": handler}, model_of=_model_of),
        GrpcService(HEALTH, "", {"Check": handler}),
    ]
    register(server, services, _Unchecked(), observer)
    return server, handler


def test_at_ratio_0_a_grpc_call_without_a_traceparent_gets_the_unwrapped_handler() -> None:
    server, handler = _register(Sampling(True, 0.0))
    method = f"/{PREDICT}/Predict"
    assert PREDICT not in server.registered  # found by name, it would bypass the dispatch
    assert ParentDispatch in [type(g) for g in server.generic]
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


@pytest.mark.parametrize("observer", [None, GrpcObserver(None)])
def test_without_observation_each_service_is_registered_generic_and_by_name(
    observer: GrpcObserver | None,
) -> None:
    server: Any = _Server()
    handler = grpc.unary_unary_rpc_method_handler(_echo)
    service = GrpcService(PREDICT, "tfserving", {"Predict": handler}, model_of=_model_of)
    register(server, [service], _Unchecked(), observer)
    assert server.registered[PREDICT]["Predict"] is handler
    assert server.generic[0].service(_Details(f"/{PREDICT}/Predict", ())) is handler
