"""Where every gRPC method's handler is built and registered: :func:`register`, the one place
the per-call chain is assembled (its docstring gives the order and why), and :func:`unary`, the
handler of one servicer method, typed by that method's own request and response types.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, overload

import grpc
from google.protobuf.message import Message

from gateway.transport.gate import Gate, MethodHandler
from gateway.transport.surface import GrpcService

RequestMessage = TypeVar("RequestMessage", bound=Message)
ResponseMessage = TypeVar("ResponseMessage", bound=Message)


class ServiceRegistry(Protocol):
    """Where handlers are registered: a ``grpc.aio.Server`` (or a test's recording stand-in)."""

    def add_generic_rpc_handlers(self, handlers: Any) -> None: ...

    def add_registered_method_handlers(
        self, service: str, handlers: Mapping[str, MethodHandler]
    ) -> None: ...


class Observer(Protocol):
    """What observes calls (:class:`~gateway.observability.grpc_hook.GrpcObserver`)."""

    @property
    def only_with_parent(self) -> bool:
        """Only a call with a ``traceparent`` is worth observing (the others skip the wrapper)."""
        ...

    def wrap(self, service: GrpcService, method: str, handler: MethodHandler) -> MethodHandler:
        """``handler`` observed (or as it is, for a method not observed)."""
        ...


def register(
    server: ServiceRegistry, services: Iterable[GrpcService], gate: Gate, observer: Observer | None
) -> None:
    """Register ``services`` on ``server``, each method's call running through, outside in:

    1. **observation** (``observer``, for services with a ``model_of``): the call record, span,
       server-timing and request log. Outermost, so it records every call's final status: the
       gate's refusals and the error rule's codes as well as the servicer's answers.
    2. **the gate** (:meth:`Gate.wrap`): an undecodable request is INVALID_ARGUMENT, a missing
       token UNAUTHENTICATED, draining or a full bound UNAVAILABLE — all before the servicer
       runs; it counts the call in flight while the servicer runs.
    3. **the error rule** (:func:`~gateway.transport.grpc_errors.rpc` on each protocol's servicer
       method): a ServingError aborts with its code, anything else with INTERNAL; what is outside
       sees a status on the context, never our exception.
    4. **the servicer method**, with its handler's codecs (:func:`unary`).

    Each layer costs one coroutine frame per call, built here once (a grpc.aio interceptor
    would add its chain to every call, even one it passes through). A service observed only
    with a parent is found through a :class:`ParentDispatch`, so a call without a
    ``traceparent`` runs the gated handler alone."""
    table = MethodTable()
    dispatches = []
    for service in services:
        gated = {
            name: gate.wrap(service.name, name, handler, bounded=service.bounded)
            for name, handler in service.handlers.items()
        }
        if observer is None or service.model_of is None:
            table.add(server, service.name, gated)
            continue
        observed = {name: observer.wrap(service, name, h) for name, h in gated.items()}
        if observer.only_with_parent:
            dispatches.append(ParentDispatch(service.name, gated, observed))
        else:
            table.add(server, service.name, observed)
    server.add_generic_rpc_handlers((table, *dispatches))


class MethodTable(grpc.GenericRpcHandler):  # type: ignore[misc]
    """Every registered method's handler by its full path (``/<service>/<method>``): one
    lookup per call whatever the service (grpc.aio asks each generic handler in turn)."""

    def __init__(self) -> None:
        self.handlers: dict[str, MethodHandler] = {}

    def add(
        self, server: ServiceRegistry, service: str, handlers: Mapping[str, MethodHandler]
    ) -> None:
        """``handlers`` of ``service``, also registered by service name (the lookup grpc.aio
        may use instead)."""
        for name, handler in handlers.items():
            self.handlers[f"/{service}/{name}"] = handler
        server.add_registered_method_handlers(service, handlers)

    def service(self, details: grpc.HandlerCallDetails) -> MethodHandler | None:
        return self.handlers.get(details.method)


@overload
def unary(
    method: Callable[[RequestMessage, Any], Awaitable[bytes]],
    request: type[RequestMessage],
    response: type[bytes],
) -> MethodHandler: ...


@overload
def unary(
    method: Callable[[RequestMessage, Any], Awaitable[ResponseMessage]],
    request: type[RequestMessage],
    response: type[ResponseMessage],
) -> MethodHandler: ...


def unary(method: Any, request: Any, response: Any) -> MethodHandler:
    """The handler of a unary servicer ``method`` taking ``request`` messages and answering
    ``response`` messages, or ``bytes``: a response already written as wire bytes, sent as is."""
    return grpc.unary_unary_rpc_method_handler(
        method,
        request_deserializer=request.FromString,
        response_serializer=None if response is bytes else response.SerializeToString,
    )


def generated(name: str, add: Callable[[ServiceRegistry], None]) -> GrpcService:
    """Service ``name`` as a generated ``add_*_to_server`` bound to its servicer registers it
    (health, reflection): neither bounded nor observed."""
    captured = _Captured()
    add(captured)
    return GrpcService(name, "", captured.handlers[name])


class _Captured:
    """Keeps what generated code registers by name (it registers a generic copy too: ignored)."""

    def __init__(self) -> None:
        self.handlers: dict[str, Mapping[str, MethodHandler]] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass

    def add_registered_method_handlers(
        self, service: str, handlers: Mapping[str, MethodHandler]
    ) -> None:
        self.handlers[service] = dict(handlers)


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
