"""TF Serving's API as the front door takes it (a
:class:`~gateway.transport.surface.ProtocolSurface`): PredictionService and ModelService over
gRPC, the ``/v1/`` REST API, both over one :class:`~gateway.serving.core.ServingCore`.

PredictionService's calls count against ``--max_concurrent_requests``; ModelService's (status,
reload) do not. Observability learns a call's model from its request's ``model_spec`` (a
MultiInference's first task's) and a MultiInference's rows from its examples; request logging
writes PredictionService's calls as :mod:`~gateway.tfserving.prediction_log` makes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway._pb.tensorflow_serving.apis import model_service_pb2, prediction_service_pb2
from gateway.config.management_paths import ManagementPaths
from gateway.config.settings import Settings
from gateway.serving.core import ServingCore
from gateway.tfserving import PROTOCOL
from gateway.tfserving.codec import inference_messages, service_messages
from gateway.tfserving.grpc import ModelService, PredictionService
from gateway.tfserving.prediction_log import LOG_AS
from gateway.tfserving.rest.examples import ClassifyRegressHandler
from gateway.tfserving.rest.routes import TfServingRest
from gateway.transport.auth import AdminAccess
from gateway.transport.http.routes import Routes
from gateway.transport.surface import GrpcService

PREDICTION_SERVICE = prediction_service_pb2.DESCRIPTOR.services_by_name[
    "PredictionService"
].full_name
MODEL_SERVICE = model_service_pb2.DESCRIPTOR.services_by_name["ModelService"].full_name


@dataclass(frozen=True)
class TfServingOptions:
    """The flags TF Serving's adapters read. ``max_elements``: ``--max_tensor_elements``;
    ``max_request_bytes``: ``--max_request_bytes``; ``as_tensor_content``:
    ``--enable_serialization_as_tensor_content``; ``method_name_check``:
    ``--enable_signature_method_name_check``; ``management``: ``--enable_model_management_api``;
    ``admin``: who may reload (``--auth_*``); ``paths``: where a reload may point base paths and
    log prefixes (``--management_*_dirs``; None: anywhere)."""

    max_elements: int
    max_request_bytes: int
    as_tensor_content: bool = False
    method_name_check: bool = False
    management: bool = False
    admin: AdminAccess = field(default_factory=AdminAccess)
    paths: ManagementPaths | None = None

    @classmethod
    def from_settings(
        cls, settings: Settings, admin: AdminAccess | None = None
    ) -> TfServingOptions:
        return cls(
            max_elements=settings.max_tensor_elements,
            max_request_bytes=settings.max_request_bytes,
            as_tensor_content=settings.enable_serialization_as_tensor_content,
            method_name_check=settings.enable_signature_method_name_check,
            management=settings.enable_model_management_api,
            admin=admin or AdminAccess(),
            paths=ManagementPaths.from_flags(
                settings.management_base_path_dirs, settings.management_log_dirs
            ),
        )


class TfServingSurface:
    """TF Serving's gRPC services and REST API over ``core``."""

    name = PROTOCOL

    def __init__(self, core: ServingCore, options: TfServingOptions) -> None:
        self._core = core
        self._options = options

    def grpc_services(self) -> Sequence[GrpcService]:
        options = self._options
        prediction = PredictionService(
            self._core,
            max_elements=options.max_elements,
            max_request_bytes=options.max_request_bytes,
            as_tensor_content=options.as_tensor_content,
            method_name_check=options.method_name_check,
        )
        model = ModelService(
            self._core, management=options.management, admin=options.admin, paths=options.paths
        )
        return (
            GrpcService(
                PREDICTION_SERVICE,
                PROTOCOL,
                prediction.handlers(),
                bounded=True,
                model_of=service_messages.model_name,
                rows_of={"MultiInference": inference_messages.example_count},
                log_as=LOG_AS,
            ),
            GrpcService(
                MODEL_SERVICE,
                PROTOCOL,
                model.handlers(),
                model_of=service_messages.model_name,
            ),
        )

    def add_routes(self, routes: Routes) -> None:
        options = self._options
        routes.add_api(
            TfServingRest(
                self._core,
                max_elements=options.max_elements,
                max_request_bytes=options.max_request_bytes,
                classify_regress=ClassifyRegressHandler(
                    self._core, method_name_check=options.method_name_check
                ),
            )
        )
