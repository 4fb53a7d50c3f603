"""The Open Inference Protocol as the front door takes it (a
:class:`~gateway.transport.surface.ProtocolSurface`): ``inference.GRPCInferenceService`` over gRPC
and the ``/v2`` REST API, on the same ports as TF Serving's API and over the same
:class:`~gateway.serving.core.ServingCore`.

Every unary call of GRPCInferenceService counts against ``--max_concurrent_requests`` (ModelInfer
as TF Serving's Predict does; its health and metadata calls with it, since the bound is per
service). Observability learns a call's model from its request's ``model_name`` or ``name``.
How ModelInfer calls are request-logged is the composition's to say (``log_as``: the records are
TF Serving's, which this package does not import).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping, Sequence
from typing import Any

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway.config.settings import Settings
from gateway.observability.model_stats import ModelStats
from gateway.serving.core import ServingCore
from gateway.transport.auth import AdminAccess
from gateway.transport.http.routes import Routes
from gateway.transport.surface import GrpcService, LogAs, LogRecord
from gateway.v2 import PROTOCOL
from gateway.v2.dataplane import DataPlane, V2Options
from gateway.v2.grpc import GRPCInferenceService
from gateway.v2.model_control import ModelRepository
from gateway.v2.rest.routes import V2Rest

SERVICE = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"].full_name


def options_from(settings: Settings, admin: AdminAccess | None = None) -> V2Options:
    """The flags the V2 adapters read (:class:`V2Options`); ``admin``: who may load and unload
    (default: anyone)."""
    try:
        version = importlib.metadata.version("tensorgate")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return V2Options(
        max_elements=settings.max_tensor_elements,
        max_request_bytes=settings.max_request_bytes,
        management=settings.enable_model_management_api,
        version=version,
        admin=admin or AdminAccess(),
    )


def model_of(request: Any) -> str:
    """The model a V2 request names ("" for the server-wide calls)."""
    return str(getattr(request, "model_name", "") or getattr(request, "name", ""))


class V2Surface:
    """GRPCInferenceService and ``/v2`` over ``core``; ``stats``: each model version's
    statistics (None while metrics are off: the statistics extension then reports zeros);
    ``repository``: the repository extension (:class:`DataPlane`'s); ``log_as``: per method,
    how a sampled call is request-logged (:attr:`GrpcService.log_as
    <gateway.transport.surface.GrpcService>`; none: no call is); ``rest_log``: how a sampled
    REST infer is (None: it is not)."""

    name = PROTOCOL

    def __init__(
        self,
        core: ServingCore,
        options: V2Options,
        stats: ModelStats | None = None,
        repository: ModelRepository | None = None,
        log_as: Mapping[str, LogAs] | None = None,
        rest_log: LogRecord | None = None,
    ) -> None:
        self._plane = DataPlane(core, options, stats, repository)
        self._log_as = dict(log_as or {})
        self._rest_log = rest_log

    def grpc_services(self) -> Sequence[GrpcService]:
        handlers = GRPCInferenceService(self._plane).handlers()
        service = GrpcService(
            SERVICE, PROTOCOL, handlers, bounded=True, model_of=model_of, log_as=self._log_as
        )
        return (service,)

    def add_routes(self, routes: Routes) -> None:
        routes.add_api(V2Rest(self._plane, log_record=self._rest_log))
