"""A tiny V2 server made only of ``gateway.v2``'s codecs, for testing them and the tritonclient
harness against the real client before the adapters exist.

One model ``m``, versions 1 and 2 (label ``stable`` → 1): inputs ``x`` FP32 [-1, 2] and ``s``
BYTES [-1]; outputs ``y = 2x + version`` (FP32) and ``t`` = each ``s`` reversed (BYTES). gRPC:
a bare grpc.aio server with the generated servicer; REST: an aiohttp app with the ``/v2`` routes
the tests use. Both on 127.0.0.1, OS-chosen ports.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import numpy as np
from aiohttp import web

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway._pb.inference import grpc_service_pb2_grpc as pb_grpc
from gateway.errors import InvalidArgument, ServingError
from gateway.serving.registry import Servable
from gateway.serving.signature import Signature, TensorSpec
from gateway.v2 import errors, grpc_infer, metadata, rest_request, rest_response, versions
from gateway.v2.declared import Limits

MODEL = "m"
LIMITS = Limits(max_elements=10_000, max_bytes=1_000_000)
SIGNATURE = Signature(
    "serving_default",
    (TensorSpec("x", "float32", (-1, 2)), TensorSpec("s", "string", (-1,))),
    (TensorSpec("y", "float32", (-1, 2)), TensorSpec("t", "string", (-1,))),
)
SERVABLES = {
    v: Servable(MODEL, v, f"{MODEL}:{v}", "onnx", {"serving_default": SIGNATURE}) for v in (1, 2)
}
LABELS = {"stable": 1}


def resolve(name: str, version: str) -> Servable:
    found = versions.target(name, version)
    number = LABELS.get(found.label or "", found.version)
    if found.label is not None and found.label not in LABELS:
        raise InvalidArgument(f"Unrecognized servable version label: {found.label}")
    if name != MODEL or (number is not None and number not in SERVABLES):
        raise versions.unknown(found)
    return SERVABLES[number or max(SERVABLES)]


def run(servable: Servable, inputs: dict[str, np.ndarray], wanted: list[str]) -> dict[str, Any]:
    outputs = {
        "y": (inputs["x"] * 2 + servable.version).astype(np.float32),
        "t": np.array([bytes(v)[::-1] for v in inputs["s"].reshape(-1)], dtype=object),
    }
    for name in wanted:
        if name not in outputs:
            raise InvalidArgument(f"output tensor alias not found in signature: {name}")
    return {name: outputs[name] for name in wanted or outputs}


class Servicer(pb_grpc.GRPCInferenceServiceServicer):
    async def ServerLive(self, request: Any, context: Any) -> Any:
        return pb.ServerLiveResponse(live=True)

    async def ServerReady(self, request: Any, context: Any) -> Any:
        return pb.ServerReadyResponse(ready=True)

    async def ModelReady(self, request: Any, context: Any) -> Any:
        return await _guard(context, lambda: _ready(request.name, request.version))

    async def ServerMetadata(self, request: Any, context: Any) -> Any:
        return metadata.server_metadata("0.0.0-fake", model_repository=False)

    async def ModelMetadata(self, request: Any, context: Any) -> Any:
        def answer() -> Any:
            return metadata.model_metadata(resolve(request.name, request.version), SERVABLES)

        return await _guard(context, answer)

    async def ModelInfer(self, request: Any, context: Any) -> Any:
        def answer() -> Any:
            call = grpc_infer.infer_call(request)
            servable = resolve(request.model_name, request.model_version)
            sig = metadata.signature_for(MODEL, servable.signatures, call.options.signature_name)
            inputs = grpc_infer.infer_inputs(request, sig, LIMITS)
            outputs = run(servable, inputs, call.output_filter())
            return grpc_infer.infer_response(MODEL, servable.version, call.id, outputs)

        return await _guard(context, answer)

    async def SystemSharedMemoryStatus(self, request: Any, context: Any) -> Any:
        def answer() -> Any:
            raise errors.not_supported("the system shared-memory extension")

        return await _guard(context, answer)


def _ready(name: str, version: str) -> Any:
    try:
        resolve(name, version)
    except ServingError:
        return pb.ModelReadyResponse(ready=False)
    return pb.ModelReadyResponse(ready=True)


async def _guard(context: Any, answer: Callable[[], Any]) -> Any:
    try:
        return answer()
    except ServingError as error:
        await context.abort(errors.grpc_status(error.code), error.message)


def _reply(response: rest_response.RestResponse, status: int = 200) -> web.Response:
    return web.Response(body=response.body, status=status, headers=response.headers)


def _rest(handler: Callable[[web.Request], Awaitable[web.Response]]) -> Any:
    async def wrapped(request: web.Request) -> web.Response:
        try:
            return await handler(request)
        except ServingError as error:
            return web.Response(
                body=errors.error_body(error),
                status=errors.http_status(error.code),
                content_type="application/json",
            )

    return wrapped


async def _infer(request: web.Request) -> web.Response:
    match = request.match_info
    parsed = rest_request.parse(
        await request.read(),
        request.headers.get(rest_request.INFER_HEADER),
        match["model"],
        match.get("version", ""),
    )
    servable = resolve(match["model"], match.get("version", ""))
    sig = metadata.signature_for(MODEL, servable.signatures, parsed.call.options.signature_name)
    inputs = rest_request.rest_inputs(parsed, sig, LIMITS)
    outputs = run(servable, inputs, parsed.call.output_filter())
    return _reply(rest_response.infer_response(parsed.call, MODEL, servable.version, outputs))


async def _model_metadata(request: web.Request) -> web.Response:
    match = request.match_info
    servable = resolve(match["model"], match.get("version", ""))
    document = metadata.model_metadata_json(servable, SERVABLES)
    return _reply(rest_response.json_response(document))


async def _model_ready(request: web.Request) -> web.Response:
    ready = _ready(request.match_info["model"], request.match_info.get("version", "")).ready
    document = metadata.model_ready_json(request.match_info["model"], ready)
    return _reply(rest_response.json_response(document), 200 if ready else 400)


async def _server_metadata(request: web.Request) -> web.Response:
    document = metadata.server_metadata_json("0.0.0-fake", model_repository=False)
    return _reply(rest_response.json_response(document))


async def _live(request: web.Request) -> web.Response:
    return _reply(rest_response.json_response(metadata.live_json(True)))


async def _shm(request: web.Request) -> web.Response:
    raise errors.not_supported("the system shared-memory extension")


def _app() -> web.Application:
    app = web.Application()
    versioned = ("/v2/models/{model}", "/v2/models/{model}/versions/{version}")
    for base in versioned:
        app.router.add_post(base + "/infer", _rest(_infer))
        app.router.add_get(base, _rest(_model_metadata))
        app.router.add_get(base + "/ready", _rest(_model_ready))
    app.router.add_get("/v2", _rest(_server_metadata))
    app.router.add_get("/v2/health/live", _rest(_live))
    app.router.add_get("/v2/systemsharedmemory/status", _rest(_shm))
    return app


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[tuple[str, str]]:
    """Serve gRPC and REST; yields their ``host:port`` targets."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(Servicer(), server)
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    runner = web.AppRunner(_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, http_port = runner.addresses[0][:2]
    try:
        yield f"127.0.0.1:{grpc_port}", f"{host}:{http_port}"
    finally:
        await runner.cleanup()
        await server.stop(None)
