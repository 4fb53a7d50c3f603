"""The gRPC side: one grpc.aio server interceptor around PredictionService and ModelService.

Each call gets a server span (continuing a W3C ``traceparent`` from its metadata; attributes from
OpenTelemetry's RPC conventions: ``rpc.system``, ``rpc.service``, ``rpc.method``,
``rpc.grpc.status_code``) and the metrics TF Serving's ``prediction_service_impl.cc`` records:
``request_count`` {model_name, status} and, when OK, ``request_latency`` {model_name, API,
entrypoint="GRPC"} for Predict, Classify and Regress only (upstream records nothing for
GetModelMetadata or MultiInference at this level; a successful MultiInference records its example
count, as its ``multi_inference.cc``). Health and reflection calls pass untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from gateway._pb.tensorflow_serving.apis import model_service_pb2, prediction_service_pb2
from gateway.observability.calls import Recorder
from gateway.tfserving.codec.messages import example_count, model_name

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


class ObservingInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Wraps each unary method of :data:`SERVICES` once (the wrapped handler is cached). When
    only a sampled parent makes a call worth recording (``Recorder.needs_parent``: tracing at
    ratio 0 without metrics), a call without a ``traceparent`` gets the unwrapped handler."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}
        self._passed: dict[str, grpc.RpcMethodHandler] = {}
        """Unwrapped handlers, for calls the recorder has no use for (see ``needs_parent``)."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method: str = details.method
        if self.recorder.needs_parent and not _has_traceparent(details.invocation_metadata):
            raw = self._passed.get(method)
            if raw is None:
                raw = self._passed[method] = await continuation(details)
            return raw
        wrapped = self._handlers.get(method)
        if wrapped is not None:
            return wrapped
        handler = await continuation(details)
        service, _, name = method.lstrip("/").rpartition("/")
        if handler is None or handler.unary_unary is None or service not in SERVICES:
            return handler
        wrapped = grpc.unary_unary_rpc_method_handler(
            self._observe(service, name, handler.unary_unary),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
        self._handlers[method] = wrapped
        return wrapped

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


def _has_traceparent(metadata: Any) -> bool:
    return any(key == "traceparent" for key, _ in metadata or ())


CODES = {code.name: int(code.value[0]) for code in grpc.StatusCode}
"""Canonical code name → its number (``rpc.grpc.status_code``)."""
