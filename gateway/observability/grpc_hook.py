"""The gRPC side: observed method handlers for the services a protocol lets observability see
(:class:`~gateway.transport.surface.GrpcService` with a ``model_of``: TF Serving's
PredictionService and ModelService), put in place where the services are registered
(:class:`ObservingRegistry`), in one place, as an interceptor would be.

Each call gets a server span (continuing a W3C ``traceparent`` from its metadata; attributes from
OpenTelemetry's RPC conventions: ``rpc.system``, ``rpc.service``, ``rpc.method``,
``rpc.grpc.status_code``) and a call record: its protocol, method, the model its request names and,
once it succeeded, the rows the service says it carries (TF Serving's metrics are an output format
of these records: :meth:`~gateway.observability.tfs_metrics.TfServingMetrics.record_call`). With
``--enable_server_timing`` a successful answer's trailing metadata carries ``server-timing``
(:mod:`~gateway.observability.server_timing`), and a successful call of a method the protocol
can log (``log_as``) is offered to the request log (:mod:`~gateway.observability.request_log`).
Health and reflection calls pass untouched.

Why not a ``grpc.aio.ServerInterceptor``: grpc.aio runs every call through its interceptors'
coroutine chain (two coroutine frames and a ``functools.partial`` per interceptor) before the
handler lookup, even a call the interceptor passes through untouched. Registered here, a call
costs its wrapper's one frame, and at ratio 0 (:attr:`Recorder.needs_parent`) a call without a
``traceparent`` costs one plain function call that looks for one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import grpc

from gateway.observability import server_timing
from gateway.observability.calls import Recorder
from gateway.observability.request_log import RequestLog
from gateway.transport.gate import MethodHandler, Registrar, ServiceRegistry
from gateway.transport.surface import GrpcService, LogAs, ModelOf

SERVER_ERRORS = frozenset(
    {"UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS"}
)
"""Codes that mark a server span as an error (OpenTelemetry's gRPC conventions)."""

Behavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]


class ObservingRegistry(Registrar):
    """Registers, in place of the handlers it is given, observed ones: each unary method of the
    observed ``services`` (those with a ``model_of``) wrapped once, the other services as given.
    When only a sampled parent makes a call worth recording (``Recorder.needs_parent``), an
    observed service is registered only through :class:`ParentDispatch` (handlers registered by
    name would be found first), so a call without a ``traceparent`` gets the unwrapped handler."""

    def __init__(
        self,
        recorder: Recorder | None,
        server: ServiceRegistry,
        services: Iterable[GrpcService],
        request_log: RequestLog | None = None,
    ) -> None:
        super().__init__(server)
        self.recorder = recorder
        self.request_log = request_log
        self.observed = {s.name: (s, s.model_of) for s in services if s.model_of is not None}
        """Service name → the service and how to tell a request's model."""

    def add_registered_method_handlers(
        self, service: str, handlers: Mapping[str, MethodHandler]
    ) -> None:
        described = self.observed.get(service)
        if described is not None:
            observed = {name: self._wrap(*described, name, h) for name, h in handlers.items()}
            recorder = self.recorder
            if recorder is not None and recorder.needs_parent and self.request_log is None:
                dispatch = ParentDispatch(service, handlers, observed)
                self._server.add_generic_rpc_handlers((dispatch,))
                return
            handlers = observed
        self.register(service, handlers)

    def _wrap(
        self, service: GrpcService, model_of: ModelOf, name: str, handler: MethodHandler
    ) -> MethodHandler:
        if handler.unary_unary is None:
            return handler
        log_as = None if self.request_log is None else service.log_as.get(name)
        if self.recorder is not None:
            observed = self._observe(service, model_of, name, handler.unary_unary, log_as)
        elif log_as is not None:
            observed = self._logged(model_of, handler.unary_unary, log_as)
        else:
            return handler
        return handler._replace(unary_unary=observed)

    def _logged(self, model_of: ModelOf, inner: Behavior, log_as: LogAs) -> Behavior:
        """``inner`` with its successful calls offered to the request log (nothing else on)."""
        offer = self._offer(model_of, log_as)

        async def behavior(request: Any, context: grpc.aio.ServicerContext) -> Any:
            response = await inner(request, context)
            offer(request, response)
            return response

        return behavior

    def _offer(self, model_of: ModelOf, log_as: LogAs) -> Callable[[Any, Any], None]:
        """Offers one successful call (request, response) to the request log."""
        request_log = self.request_log
        if request_log is None:
            raise ValueError("no request log")

        def offer(request: Any, response: Any) -> None:
            request_log.offer(model_of(request), log_as, request, response)

        return offer

    def _observe(
        self,
        service: GrpcService,
        model_of: ModelOf,
        api: str,
        inner: Behavior,
        log_as: LogAs | None,
    ) -> Behavior:
        recorder = self.recorder
        if recorder is None:
            raise ValueError("no recorder")
        offer = None if log_as is None else self._offer(model_of, log_as)
        protocol, rows_of = service.protocol, service.rows_of.get(api)
        span_name = f"{service.name}/{api}"
        timed = recorder.timing
        attributes = {"rpc.system": "grpc", "rpc.service": service.name, "rpc.method": api}

        async def behavior(request: Any, context: grpc.aio.ServicerContext) -> Any:
            traceparent = tracestate = None
            if recorder.tracing is not None:
                for key, value in context.invocation_metadata() or ():
                    if key == "traceparent":
                        traceparent = value
                    elif key == "tracestate":
                        tracestate = value
            call, token = recorder.begin(
                protocol, api, "GRPC", span_name, traceparent, tracestate, attributes
            )
            status = "OK"
            try:
                response = await inner(request, context)
                if offer is not None:
                    offer(request, response)
                if timed:
                    timing = server_timing.value(call)
                    context.set_trailing_metadata(((server_timing.METADATA_KEY, timing),))
                return response
            except asyncio.CancelledError:
                status = "CANCELLED"
                raise
            except BaseException:
                code = context.code()
                status = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
                raise
            finally:
                call.model = model_of(request)
                call.status = status
                if rows_of is not None and status == "OK":
                    call.rows = rows_of(request)
                recorder.end(
                    call,
                    token,
                    error=status if status in SERVER_ERRORS else None,
                    attributes=None
                    if call.span is None
                    else {"rpc.grpc.status_code": CODES[status]},
                )

        return behavior


class ParentDispatch(grpc.GenericRpcHandler):  # type: ignore[misc]
    """One service's handlers, chosen per call by its metadata: the observed handler when the
    call carries a ``traceparent``, else the plain one. ``plain``, ``observed``: method name →
    handler."""

    def __init__(
        self,
        service: str,
        plain: Mapping[str, MethodHandler],
        observed: Mapping[str, MethodHandler],
    ) -> None:
        self._plain = {f"/{service}/{name}": h for name, h in plain.items()}
        self._observed = {f"/{service}/{name}": h for name, h in observed.items()}

    def service(self, details: grpc.HandlerCallDetails) -> MethodHandler | None:
        for key, _ in details.invocation_metadata or ():
            if key == "traceparent":
                return self._observed.get(details.method)
        return self._plain.get(details.method)


CODES = {code.name: int(code.value[0]) for code in grpc.StatusCode}
"""Canonical code name → its number (``rpc.grpc.status_code``)."""
