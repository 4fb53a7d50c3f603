"""gRPC adapters: PredictionService and ModelService on grpc.aio, a few lines per method.

Each method converts the request (:mod:`gateway.tfserving.codec.service_messages`), awaits the core
and converts back. A :class:`~gateway.errors.ServingError` becomes its gRPC status; anything else is
INTERNAL. HandleReloadConfigRequest answers UNIMPLEMENTED unless the management API is on. Each
servicer's :meth:`handlers` are its methods' handlers, typed by the methods' own request and
response types (Predict answers wire bytes, sent as they are).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable

import grpc

from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    model_management_pb2,
    predict_pb2,
    regression_pb2,
)
from gateway.config.management_paths import ManagementPaths
from gateway.errors import Unimplemented
from gateway.serving.core import PredictResult, ServingCore
from gateway.tfserving.codec import inference_messages, response_wire, service_messages
from gateway.tfserving.inference import ExampleInference
from gateway.transport.auth import AdminAccess, authorization_of
from gateway.transport.gate import MethodHandler
from gateway.transport.grpc_services import unary

log = logging.getLogger(__name__)


def encoded_response(result: PredictResult, *, as_tensor_content: bool) -> bytes:
    """A Predict's answer, written as wire bytes straight from the outputs
    (:mod:`~gateway.tfserving.codec.response_wire`; sent as they are)."""
    return response_wire.predict_response(
        result.model,
        result.version,
        result.signature_name,
        result.outputs,
        as_tensor_content=as_tensor_content,
    )


def deadline_of(context: grpc.aio.ServicerContext) -> float | None:
    """The call's deadline as a ``time.monotonic()`` timestamp (None when the client set none)."""
    remaining = context.time_remaining()
    return None if remaining is None else time.monotonic() + remaining


class PredictionService:
    """tensorflow.serving.PredictionService."""

    def __init__(
        self,
        core: ServingCore,
        *,
        max_elements: int,
        as_tensor_content: bool,
        method_name_check: bool = False,
        max_request_bytes: int = 2**31 - 1,
    ) -> None:
        self._core = core
        self._max_elements = max_elements
        self._max_request_bytes = max_request_bytes
        self._inference = ExampleInference(core, method_name_check=method_name_check)
        self._encode = functools.partial(encoded_response, as_tensor_content=as_tensor_content)

    def handlers(self) -> dict[str, MethodHandler]:
        return {
            "Classify": unary(
                self.Classify,
                classification_pb2.ClassificationRequest,
                classification_pb2.ClassificationResponse,
            ),
            "Regress": unary(
                self.Regress, regression_pb2.RegressionRequest, regression_pb2.RegressionResponse
            ),
            "Predict": unary(self.Predict, predict_pb2.PredictRequest, bytes),
            "MultiInference": unary(
                self.MultiInference,
                inference_pb2.MultiInferenceRequest,
                inference_pb2.MultiInferenceResponse,
            ),
            "GetModelMetadata": unary(
                self.GetModelMetadata,
                get_model_metadata_pb2.GetModelMetadataRequest,
                get_model_metadata_pb2.GetModelMetadataResponse,
            ),
        }

    def Predict(
        self, request: predict_pb2.PredictRequest, context: grpc.aio.ServicerContext
    ) -> Awaitable[bytes]:
        """The PredictResponse, already encoded (see :func:`encoded_response`): the core's
        awaitable (a plain function: one coroutine layer less per call)."""
        remaining = context.time_remaining()
        return self._core.predict(
            service_messages.model_ref(request),
            request.model_spec.signature_name,
            functools.partial(
                service_messages.PredictInputs,
                request,
                max_elements=self._max_elements,
                max_bytes=self._max_request_bytes,
            ),
            self._encode,
            request.output_filter,
            None if remaining is None else time.monotonic() + remaining,
        )

    async def GetModelMetadata(
        self,
        request: get_model_metadata_pb2.GetModelMetadataRequest,
        context: grpc.aio.ServicerContext,
    ) -> get_model_metadata_pb2.GetModelMetadataResponse:
        ref = service_messages.model_ref(request)
        service_messages.check_metadata_fields(request)
        servable, signatures = self._core.metadata(ref)
        return service_messages.metadata_response(servable.model, servable.version, signatures)

    async def Classify(
        self,
        request: classification_pb2.ClassificationRequest,
        context: grpc.aio.ServicerContext,
    ) -> classification_pb2.ClassificationResponse:
        ref = service_messages.model_ref(request)
        examples = inference_messages.examples(request.input)
        signature_name = request.model_spec.signature_name
        return await self._inference.classify(
            ref,
            signature_name,
            examples,
            inference_messages.classification_response,
            deadline_of(context),
        )

    async def Regress(
        self, request: regression_pb2.RegressionRequest, context: grpc.aio.ServicerContext
    ) -> regression_pb2.RegressionResponse:
        ref = service_messages.model_ref(request)
        examples = inference_messages.examples(request.input)
        signature_name = request.model_spec.signature_name
        return await self._inference.regress(
            ref,
            signature_name,
            examples,
            inference_messages.regression_response,
            deadline_of(context),
        )

    async def MultiInference(
        self,
        request: inference_pb2.MultiInferenceRequest,
        context: grpc.aio.ServicerContext,
    ) -> inference_pb2.MultiInferenceResponse:
        tasks = inference_messages.tasks(request)
        examples = inference_messages.examples(request.input)
        results = await self._inference.multi_inference(tasks, examples, deadline_of(context))
        return inference_messages.multi_inference_response(results)


class ModelService:
    """tensorflow.serving.ModelService. ``management``: answer HandleReloadConfigRequest
    (``--enable_model_management_api``); off, it is UNIMPLEMENTED (gRPC's code for a method "not
    supported/enabled in this service"). ``admin``: who may call it; ``paths``: where its
    config's base paths and log prefixes may point (default: anyone, anywhere)."""

    def __init__(
        self,
        core: ServingCore,
        *,
        management: bool = False,
        admin: AdminAccess | None = None,
        paths: ManagementPaths | None = None,
    ) -> None:
        self._core = core
        self._management = management
        self._admin = admin or AdminAccess()
        self._paths = paths

    def handlers(self) -> dict[str, MethodHandler]:
        return {
            "GetModelStatus": unary(
                self.GetModelStatus,
                get_model_status_pb2.GetModelStatusRequest,
                get_model_status_pb2.GetModelStatusResponse,
            ),
            "HandleReloadConfigRequest": unary(
                self.HandleReloadConfigRequest,
                model_management_pb2.ReloadConfigRequest,
                model_management_pb2.ReloadConfigResponse,
            ),
        }

    async def GetModelStatus(
        self,
        request: get_model_status_pb2.GetModelStatusRequest,
        context: grpc.aio.ServicerContext,
    ) -> get_model_status_pb2.GetModelStatusResponse:
        ref = service_messages.model_ref(request)
        statuses = self._core.status(ref.name, ref.version, ref.label)
        return service_messages.status_response(ref.name, statuses)

    async def HandleReloadConfigRequest(
        self,
        request: model_management_pb2.ReloadConfigRequest,
        context: grpc.aio.ServicerContext,
    ) -> model_management_pb2.ReloadConfigResponse:
        """Replace the served models with the request's ``model_config_list``; answers once new
        models are available or failed and removed ones unloaded (see ModelManager.apply). Only
        the admin credential may; its base paths and log prefixes must be allowed."""
        if not self._management:
            raise Unimplemented(
                "HandleReloadConfigRequest is disabled: start tensorgate with "
                "--enable_model_management_api to let clients replace the served models"
            )
        self._admin.check(authorization_of(context.invocation_metadata()))
        paths = None if self._paths is None else self._paths.keeping(self._core.models.specs())
        specs = service_messages.reload_specs(request, paths)
        log.info("HandleReloadConfigRequest: %d model(s): %s", len(specs), [s.name for s in specs])
        await self._core.reload(specs)
        return service_messages.reload_response(request)
