"""The gRPC side: observed method handlers for the services a protocol lets observability see
(:class:`~gateway.transport.surface.GrpcService` with a ``model_of``), made by
:class:`GrpcObserver` where the services are registered: the outermost layer of each call
(:func:`gateway.transport.grpc_services.register` gives the order).

Each call gets a server span (continuing a W3C ``traceparent`` from its metadata; attributes from
OpenTelemetry's RPC conventions: ``rpc.system``, ``rpc.service``, ``rpc.method``,
``rpc.grpc.status_code``) and a call record: its protocol, method, the model its request names and,
once it succeeded, the rows the service says it carries (TF Serving's metrics are an output format
of these records: :meth:`~gateway.observability.tfs_metrics.TfServingMetrics.record_call`). With
``--enable_server_timing`` a successful answer's trailing metadata carries ``server-timing``
(:mod:`~gateway.observability.server_timing`), and a successful call of a method the protocol
can log (``log_as``) is offered to the request log (:mod:`~gateway.observability.request_log`).
Health and reflection calls pass untouched.
A call costs its wrapper's one frame; at ratio 0 (:attr:`Recorder.needs_parent`) a call without a
``traceparent`` costs one plain function call that looks for one
(:class:`~gateway.transport.grpc_services.ParentDispatch`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from gateway.observability import server_timing
from gateway.observability.calls import Recorder
from gateway.observability.request_log import RequestLog
from gateway.transport.gate import MethodHandler
from gateway.transport.surface import GrpcService, LogAs, ModelOf

SERVER_ERRORS = frozenset(
    {"UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS"}
)
"""Codes that mark a server span as an error (OpenTelemetry's gRPC conventions)."""

Behavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]


class GrpcObserver:
    """Makes observed handlers: each unary method of an observed service recorded by
    ``recorder`` (None: only logged) and offered to ``request_log`` (None: not logged)."""

    def __init__(self, recorder: Recorder | None, request_log: RequestLog | None = None) -> None:
        self.recorder = recorder
        self.request_log = request_log

    @property
    def only_with_parent(self) -> bool:
        """Only a sampled parent makes a call worth recording, and nothing is logged."""
        recorder = self.recorder
        return recorder is not None and recorder.needs_parent and self.request_log is None

    def wrap(self, service: GrpcService, method: str, handler: MethodHandler) -> MethodHandler:
        """``handler`` observed; as it is when it is not unary, its service has no ``model_of``
        or there is nothing to do for it."""
        model_of = service.model_of
        if handler.unary_unary is None or model_of is None:
            return handler
        log_as = None if self.request_log is None else service.log_as.get(method)
        if self.recorder is not None:
            observed = self._observe(service, model_of, method, handler.unary_unary, log_as)
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


CODES = {code.name: int(code.value[0]) for code in grpc.StatusCode}
"""Canonical code name → its number (``rpc.grpc.status_code``)."""
