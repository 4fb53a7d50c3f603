"""What a protocol package hands the front door: its :class:`ProtocolSurface`.

Each protocol (TF Serving's API, the Open Inference Protocol) is one package of adapters and
codecs over the same serving core; the application composes the list of their surfaces and
knows nothing of their internals:

- :meth:`ProtocolSurface.grpc_services`: each gRPC service as a :class:`GrpcService`: its
  method handlers (registered by :func:`~gateway.transport.grpc_services.register`), whether
  its calls count against the concurrency bound, and what observability may learn of a call
  from its request (the model, the rows) — so the observability hooks import no protocol
  package;
- :meth:`ProtocolSurface.add_routes`: its REST API, registered with the HTTP server's
  :class:`~gateway.transport.http.routes.Routes`;
- its services' full names are what gRPC reflection lists (:func:`service_names`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.transport.gate import MethodHandler
from gateway.transport.http.routes import Routes

ModelOf = Callable[[Any], str]
"""A request → the model it names ("" when none)."""

RowsOf = Callable[[Any], int]
"""A request → the rows (examples, instances) it carries."""


@dataclass(frozen=True, slots=True)
class Sampled:
    """What request logging records of a sampled call beside its request and response (TF
    Serving's ``LogMetadata``): its model's ``sampling_rate`` and ``attributes``, and when it was
    answered (``timestamp_secs``, seconds since the Unix epoch)."""

    sampling_rate: float
    attributes: int
    timestamp_secs: int


LogRecord = Callable[[Any, Any, Sampled], bytes]
"""A successful call's request and response → one framed TFRecord record holding its
``tensorflow.serving.PredictionLog``; called off the event loop, in the request log's writer."""


@dataclass(frozen=True, slots=True)
class LogAs:
    """How a protocol's successful calls of one method are request-logged: ``record`` makes the
    record (off the loop); ``nbytes(request, response)`` says, cheaply and on the loop, about how
    many bytes the pair holds while its record waits to be written (the request log's byte
    budget)."""

    record: LogRecord
    nbytes: Callable[[Any, Any], int]


@dataclass(frozen=True)
class GrpcService:
    """One gRPC service of a protocol.

    ``name``: its full name (``tensorflow.serving.PredictionService``). ``protocol``: the
    protocol's name (``"tfserving"``; "" for health and reflection). ``handlers``: method name →
    its handler (:func:`~gateway.transport.grpc_services.unary`). ``bounded``: its unary calls
    count against ``--max_concurrent_requests``. ``model_of``: the model a call's request names,
    for metrics and traces (None: the service's calls are not observed). ``rows_of``: per method,
    the rows its request carries, where that is cheap to know (observability's ``rows``).
    ``log_as``: per method, how a sampled call is logged (request logging, ``logging_config``);
    methods not listed are never logged.
    """

    name: str
    protocol: str
    handlers: Mapping[str, MethodHandler]
    bounded: bool = False
    model_of: ModelOf | None = None
    rows_of: Mapping[str, RowsOf] = field(default_factory=dict)
    log_as: Mapping[str, LogAs] = field(default_factory=dict)


class ProtocolSurface(Protocol):
    """One protocol's front: its gRPC services and its REST API."""

    @property
    def name(self) -> str:
        """The protocol's name (``"tfserving"``), as call records carry it."""
        ...

    def grpc_services(self) -> Sequence[GrpcService]: ...

    def add_routes(self, routes: Routes) -> None: ...


def service_names(services: Iterable[GrpcService], *others: str) -> tuple[str, ...]:
    """The full names to list through gRPC reflection: ``services``' in order, then ``others``
    (health, reflection itself)."""
    return (*(service.name for service in services), *others)
