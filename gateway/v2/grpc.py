"""gRPC adapter: ``inference.GRPCInferenceService`` on grpc.aio, a few lines per method.

Each method reads its request with the codecs, awaits the :class:`~gateway.v2.dataplane.DataPlane`
and writes the response. A :class:`~gateway.errors.ServingError` becomes its canonical code as
the gRPC status (the protocol's rule); anything else is INTERNAL. ModelInfer's deadline is the
call's, tightened by a ``timeout`` parameter. The shared-memory RPCs answer UNIMPLEMENTED "the
system shared-memory extension is not supported by tensorgate"; RPCs the proto does not declare
(ModelStreamInfer, ModelConfig, TraceSetting, LogSettings) get grpc's own UNIMPLEMENTED.
:meth:`GRPCInferenceService.handlers` are the methods' handlers, typed by their own request and
response types (ModelInfer answers wire bytes, sent as they are).
"""

from __future__ import annotations

import time
from typing import Any, NoReturn

import grpc

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway.errors import grpc_status
from gateway.serving.core import PredictResult
from gateway.serving.signature import Signature
from gateway.transport.auth import authorization_of
from gateway.transport.gate import MethodHandler
from gateway.transport.grpc_services import unary
from gateway.v2 import errors, grpc_infer, metadata, repository_codec, response_wire, statistics
from gateway.v2.dataplane import DataPlane
from gateway.v2.declared import DeclaredInputs


def _deadline(context: grpc.aio.ServicerContext) -> float | None:
    """The call's deadline in ``time.monotonic()`` seconds (None when the client set none)."""
    remaining = context.time_remaining()
    return None if remaining is None else time.monotonic() + remaining


class GRPCInferenceService:
    """inference.GRPCInferenceService over one :class:`DataPlane`."""

    def __init__(self, plane: DataPlane) -> None:
        self._plane = plane

    def handlers(self) -> dict[str, MethodHandler]:
        return {
            "ServerLive": unary(self.ServerLive, pb.ServerLiveRequest, pb.ServerLiveResponse),
            "ServerReady": unary(self.ServerReady, pb.ServerReadyRequest, pb.ServerReadyResponse),
            "ModelReady": unary(self.ModelReady, pb.ModelReadyRequest, pb.ModelReadyResponse),
            "ServerMetadata": unary(
                self.ServerMetadata, pb.ServerMetadataRequest, pb.ServerMetadataResponse
            ),
            "ModelMetadata": unary(
                self.ModelMetadata, pb.ModelMetadataRequest, pb.ModelMetadataResponse
            ),
            "ModelInfer": unary(self.ModelInfer, pb.ModelInferRequest, bytes),
            "ModelStatistics": unary(
                self.ModelStatistics, pb.ModelStatisticsRequest, pb.ModelStatisticsResponse
            ),
            "RepositoryIndex": unary(
                self.RepositoryIndex, pb.RepositoryIndexRequest, pb.RepositoryIndexResponse
            ),
            "RepositoryModelLoad": unary(
                self.RepositoryModelLoad,
                pb.RepositoryModelLoadRequest,
                pb.RepositoryModelLoadResponse,
            ),
            "RepositoryModelUnload": unary(
                self.RepositoryModelUnload,
                pb.RepositoryModelUnloadRequest,
                pb.RepositoryModelUnloadResponse,
            ),
            "SystemSharedMemoryStatus": unary(
                self.SystemSharedMemoryStatus,
                pb.SystemSharedMemoryStatusRequest,
                pb.SystemSharedMemoryStatusResponse,
            ),
            "SystemSharedMemoryRegister": unary(
                self.SystemSharedMemoryRegister,
                pb.SystemSharedMemoryRegisterRequest,
                pb.SystemSharedMemoryRegisterResponse,
            ),
            "SystemSharedMemoryUnregister": unary(
                self.SystemSharedMemoryUnregister,
                pb.SystemSharedMemoryUnregisterRequest,
                pb.SystemSharedMemoryUnregisterResponse,
            ),
            "CudaSharedMemoryStatus": unary(
                self.CudaSharedMemoryStatus,
                pb.CudaSharedMemoryStatusRequest,
                pb.CudaSharedMemoryStatusResponse,
            ),
            "CudaSharedMemoryRegister": unary(
                self.CudaSharedMemoryRegister,
                pb.CudaSharedMemoryRegisterRequest,
                pb.CudaSharedMemoryRegisterResponse,
            ),
            "CudaSharedMemoryUnregister": unary(
                self.CudaSharedMemoryUnregister,
                pb.CudaSharedMemoryUnregisterRequest,
                pb.CudaSharedMemoryUnregisterResponse,
            ),
        }

    async def ServerLive(
        self, request: pb.ServerLiveRequest, context: grpc.aio.ServicerContext
    ) -> pb.ServerLiveResponse:
        return pb.ServerLiveResponse(live=True)

    async def ServerReady(
        self, request: pb.ServerReadyRequest, context: grpc.aio.ServicerContext
    ) -> pb.ServerReadyResponse:
        return pb.ServerReadyResponse(ready=self._plane.ready())

    async def ModelReady(
        self, request: pb.ModelReadyRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelReadyResponse:
        return pb.ModelReadyResponse(ready=self._plane.model_ready(request.name, request.version))

    async def ServerMetadata(
        self, request: pb.ServerMetadataRequest, context: grpc.aio.ServicerContext
    ) -> pb.ServerMetadataResponse:
        return metadata.server_metadata(self._plane.options.version)

    async def ModelMetadata(
        self, request: pb.ModelMetadataRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelMetadataResponse:
        servable, available = self._plane.model_metadata(request.name, request.version)
        return metadata.model_metadata(servable, available)

    async def ModelInfer(
        self, request: pb.ModelInferRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        """The ModelInferResponse, already encoded (:mod:`gateway.v2.response_wire`)."""
        call = grpc_infer.infer_call(request)
        limits = self._plane.limits

        def decode(signature: Signature) -> DeclaredInputs[Any]:
            return grpc_infer.infer_inputs(request, limits)

        def encode(result: PredictResult) -> bytes:
            return response_wire.infer_response(
                result.model, result.version, call.id, result.outputs
            )

        deadline = call.deadline(time.monotonic(), _deadline(context))
        return await self._plane.infer(call, decode, encode, deadline)

    async def ModelStatistics(
        self, request: pb.ModelStatisticsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelStatisticsResponse:
        figures = self._plane.statistics(request.name, request.version)
        return statistics.statistics_response(figures)

    async def RepositoryIndex(
        self, request: pb.RepositoryIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.RepositoryIndexResponse:
        if request.repository_name:
            raise errors.not_supported("'repository_name' specification")
        entries = self._plane.repository.index(ready_only=request.ready)
        return repository_codec.index_response(entries)

    async def RepositoryModelLoad(
        self, request: pb.RepositoryModelLoadRequest, context: grpc.aio.ServicerContext
    ) -> pb.RepositoryModelLoadResponse:
        call = repository_codec.call_from_proto(request, unload=False)
        await self._plane.load(call, authorization_of(context.invocation_metadata()))
        return pb.RepositoryModelLoadResponse()

    async def RepositoryModelUnload(
        self, request: pb.RepositoryModelUnloadRequest, context: grpc.aio.ServicerContext
    ) -> pb.RepositoryModelUnloadResponse:
        call = repository_codec.call_from_proto(request, unload=True)
        await self._plane.unload(call, authorization_of(context.invocation_metadata()))
        return pb.RepositoryModelUnloadResponse()

    async def SystemSharedMemoryStatus(
        self, request: pb.SystemSharedMemoryStatusRequest, context: grpc.aio.ServicerContext
    ) -> pb.SystemSharedMemoryStatusResponse:
        await _no_shared_memory(context, "system")

    async def SystemSharedMemoryRegister(
        self, request: pb.SystemSharedMemoryRegisterRequest, context: grpc.aio.ServicerContext
    ) -> pb.SystemSharedMemoryRegisterResponse:
        await _no_shared_memory(context, "system")

    async def SystemSharedMemoryUnregister(
        self, request: pb.SystemSharedMemoryUnregisterRequest, context: grpc.aio.ServicerContext
    ) -> pb.SystemSharedMemoryUnregisterResponse:
        await _no_shared_memory(context, "system")

    async def CudaSharedMemoryStatus(
        self, request: pb.CudaSharedMemoryStatusRequest, context: grpc.aio.ServicerContext
    ) -> pb.CudaSharedMemoryStatusResponse:
        await _no_shared_memory(context, "CUDA")

    async def CudaSharedMemoryRegister(
        self, request: pb.CudaSharedMemoryRegisterRequest, context: grpc.aio.ServicerContext
    ) -> pb.CudaSharedMemoryRegisterResponse:
        await _no_shared_memory(context, "CUDA")

    async def CudaSharedMemoryUnregister(
        self, request: pb.CudaSharedMemoryUnregisterRequest, context: grpc.aio.ServicerContext
    ) -> pb.CudaSharedMemoryUnregisterResponse:
        await _no_shared_memory(context, "CUDA")


async def _no_shared_memory(context: grpc.aio.ServicerContext, kind: str) -> NoReturn:
    error = errors.not_supported(f"the {kind} shared-memory extension")
    await context.abort(grpc_status(error.code), error.message)
    raise AssertionError("unreachable: context.abort raises")
