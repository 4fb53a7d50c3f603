"""The gRPC side: observed method handlers for PredictionService and ModelService, put in place
where the servicers are registered (:class:`ObservingRegistry`), in one place, as an interceptor
would be.

Each call gets a server span (continuing a W3C ``traceparent`` from its metadata; attributes from
OpenTelemetry's RPC conventions: ``rpc.system``, ``rpc.service``, ``rpc.method``,
``rpc.grpc.status_code``) and the metrics TF Serving's ``prediction_service_impl.cc`` records:
``request_count`` {model_name, status} and, when OK, ``request_latency`` {model_name, API,
entrypoint="GRPC"} for Predict, Classify and Regress only (upstream records nothing for
GetModelMetadata or MultiInference at this level; a successful MultiInference records its example
count, as its ``multi_inference.cc``). Health and reflection calls pass untouched.

Why not a ``grpc.aio.ServerInterceptor``: grpc.aio runs every call through its interceptors'
coroutine chain (two coroutine frames and a ``functools.partial`` per interceptor) before the
handler lookup, even a call the interceptor passes through untouched. Registered here, a call
costs its wrapper's one frame, and at ratio 0 (:attr:`Recorder.needs_parent`) a call without a
``traceparent`` costs one plain function call that looks for one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc

from gateway._pb.tensorflow_serving.apis import model_service_pb2, prediction_service_pb2
from gateway.observability.calls import Recorder
from gateway.tfserving.codec.messages import example_count, model_name
from gateway.transport.gate import Handler, Registrar, ServiceRegistry

SERVICES = frozenset(
    {
        prediction_service_pb2.DESCRIPTOR.services_by_name["PredictionService"].full_name,
        model_service_pb2.DESCRIPTOR.services_by_name["ModelService"].full_name,
    }
)
TF_COUNTED = frozenset({"Predict", "Classify", "Regress"})
SERVER_ERRORS = frozenset(
    {"UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS"}
)
"""Codes that mark a server span as an error (OpenTelemetry's gRPC conventions)."""

Behavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]


class ObservingRegistry(Registrar):
    """Registers, in place of the handlers it is given, observed ones: each unary method of
    :data:`SERVICES` wrapped once, the other services as given. When only a sampled parent makes
    a call worth recording (``Recorder.needs_parent``), an observed service is registered only
    through :class:`ParentDispatch` (handlers registered by name would be found first), so a
    call without a ``traceparent`` gets the unwrapped handler."""

    def __init__(self, recorder: Recorder, server: ServiceRegistry) -> None:
        super().__init__(server)
        self.recorder = recorder

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, Handler]) -> None:
        if service in SERVICES:
            observed = {name: self._wrap(service, name, h) for name, h in handlers.items()}
            if self.recorder.needs_parent:
                dispatch = ParentDispatch(service, handlers, observed)
                self._server.add_generic_rpc_handlers((dispatch,))
                return
            handlers = observed
        self.register(service, handlers)

    def _wrap(self, service: str, name: str, handler: Handler) -> Handler:
        if handler.unary_unary is None:
            return handler
        return handler._replace(unary_unary=self._observe(service, name, handler.unary_unary))

    def _observe(self, service: str, api: str, inner: Behavior) -> Behavior:
        recorder = self.recorder
        span_name = f"{service}/{api}"
        latency_api = api if api in TF_COUNTED else None
        attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": api}

        async def behavior(request: Any, context: grpc.aio.ServicerContext) -> Any:
            traceparent = tracestate = None
            if recorder.tracing is not None:
                for key, value in context.invocation_metadata() or ():
                    if key == "traceparent":
                        traceparent = value
                    elif key == "tracestate":
                        tracestate = value
            call, token = recorder.begin(
                api, "GRPC", span_name, traceparent, tracestate, attributes
            )
            status = "OK"
            try:
                return await inner(request, context)
            except asyncio.CancelledError:
                status = "CANCELLED"
                raise
            except BaseException:
                code = context.code()
                status = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
                raise
            finally:
                model = model_name(request)
                recorder.end(
                    call,
                    token,
                    model=model,
                    status=status,
                    latency_api=latency_api,
                    error=status if status in SERVER_ERRORS else None,
                    attributes=None
                    if call.span is None
                    else {"rpc.grpc.status_code": CODES[status]},
                )
                if api == "MultiInference" and status == "OK" and recorder.tfs is not None:
                    count = example_count(request)
                    recorder.tfs.request_example_counts.observe((model,), count)
                    recorder.tfs.request_example_count_total.inc((model,), count)

        return behavior


class ParentDispatch(grpc.GenericRpcHandler):  # type: ignore[misc]
    """One service's handlers, chosen per call by its metadata: the observed handler when the
    call carries a ``traceparent``, else the plain one. ``plain``, ``observed``: method name →
    handler."""

    def __init__(
        self, service: str, plain: Mapping[str, Handler], observed: Mapping[str, Handler]
    ) -> None:
        self._plain = {f"/{service}/{name}": h for name, h in plain.items()}
        self._observed = {f"/{service}/{name}": h for name, h in observed.items()}

    def service(self, details: grpc.HandlerCallDetails) -> Handler | None:
        for key, _ in details.invocation_metadata or ():
            if key == "traceparent":
                return self._observed.get(details.method)
        return self._plain.get(details.method)


CODES = {code.name: int(code.value[0]) for code in grpc.StatusCode}
"""Canonical code name → its number (``rpc.grpc.status_code``)."""
