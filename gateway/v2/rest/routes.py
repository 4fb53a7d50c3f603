"""The Open Inference Protocol's REST API: the ``/v2`` routes on the HTTP server core, a few lines
each — read the request (:mod:`gateway.v2.rest.request_body`), await the
:class:`~gateway.v2.dataplane.DataPlane`, write the answer (:mod:`gateway.v2.rest.response_body`).

The grammar is :mod:`gateway.v2.rest.paths`, applied once per request (:meth:`V2Rest.parse`).
Answers are the protocol's JSON (infer: JSON, or JSON then binary tensors); health and readiness
answer 200 when true and 400 when false (Triton's). A failed call answers ``{"error": ...}`` with
the V2 HTTP status of its code (:func:`gateway.v2.errors.v2_http_status`), ``Retry-After`` on 429
and 503. Each call's body and deadline are the core's
:class:`~gateway.transport.http.bounds.CallBounds`; an infer's ``timeout`` parameter tightens the
deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from gateway.errors import InvalidArgument, ServingError
from gateway.observability.request_log import REST_LOG
from gateway.serving.core import ModelRef, PredictResult
from gateway.serving.inputs import Decoded
from gateway.serving.signature import Signature
from gateway.transport.auth import AUTHORIZATION
from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.front import HttpError
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.json_error import failure_response
from gateway.transport.http.routes import UNKNOWN_API, ApiCall
from gateway.transport.surface import LogRecord
from gateway.v2 import PROTOCOL, errors, metadata, repository_codec, version_strings
from gateway.v2 import statistics as stats
from gateway.v2.dataplane import DataPlane
from gateway.v2.rest import paths, request_body, response_body
from gateway.v2.rest.paths import V2Call
from gateway.v2.rest.response_body import RestResponse

RouteHandler = Callable[[HttpRequest, V2Call, CallBounds], Awaitable[HttpResponse]]


class V2Rest:
    """The ``/v2`` API over one :class:`DataPlane` (an
    :class:`~gateway.transport.http.routes.HttpApi`); ``log_record``: how a sampled infer is
    request-logged (None: it is not)."""

    def __init__(self, plane: DataPlane, *, log_record: LogRecord | None = None) -> None:
        self._plane = plane
        self._log_record = log_record
        self._routes: dict[str, RouteHandler] = {
            "ServerLive": self._live,
            "ServerReady": self._ready,
            "ServerMetadata": self._server_metadata,
            "ModelMetadata": self._model_metadata,
            "ModelReady": self._model_ready,
            "ModelInfer": self._infer,
            "ModelStatistics": self._statistics,
            "RepositoryIndex": self._index,
            "RepositoryModelLoad": self._load,
            "RepositoryModelUnload": self._unload,
        }

    def owns(self, path: str) -> bool:
        return paths.is_api_path(path)

    def parse(self, method: str, path: str) -> ApiCall[V2Call]:
        """The call of one request line; a refusal (404, 405, 501) is kept."""
        try:
            call = paths.parse(method, path)
        except paths.WrongMethod as exc:
            refusal = HttpError(405, exc.message, Allow=exc.allowed)
            return ApiCall(PROTOCOL, UNKNOWN_API, refusal=refusal)
        except ServingError as exc:
            return ApiCall(PROTOCOL, UNKNOWN_API, refusal=exc)
        version = version_strings.number(call.version)
        return ApiCall(PROTOCOL, call.api, call.model, version, call.template, detail=call)

    async def serve(
        self, request: HttpRequest, call: ApiCall[V2Call], bounds: CallBounds
    ) -> HttpResponse:
        v2 = call.detail
        if v2 is None:
            raise ValueError("a refused call is not served")
        try:
            return await self._routes[v2.api](request, v2, bounds)
        except ServingError as exc:
            return failure(exc)

    # -- health and metadata --------------------------------------------------------------------
    async def _live(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        return _json(metadata.live_json(True))

    async def _ready(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        ready = self._plane.ready()
        return _json(metadata.ready_json(ready), _health_status(ready))

    async def _server_metadata(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        return _json(metadata.server_metadata_json(self._plane.options.version))

    async def _model_metadata(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        servable, available = self._plane.model_metadata(call.model, call.version)
        return _json(metadata.model_metadata_json(servable, available))

    async def _model_ready(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        ready = self._plane.model_ready(call.model, call.version)
        return _json(metadata.model_ready_json(call.model, ready), _health_status(ready))

    # -- inference ------------------------------------------------------------------------------
    async def _infer(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        body = await bounds.read_body(request)
        transport_deadline = bounds.deadline()
        header = request_body.header_length(request.header(request_body.INFER_HEADER), len(body))
        bounds.check_json(len(body) if header is None else header)  # the JSON's bytes
        limits = self._plane.limits
        if request_body.read_off_loop(body, header):  # a large JSON body: the loop serves meanwhile
            parsed = await asyncio.to_thread(
                request_body.parse_converted, body, header, call.model, call.version, limits
            )
        else:
            parsed = request_body.parse_infer(body, header, call.model, call.version)

        record = self._log_record
        logged = None if record is None else REST_LOG.get()  # sampled by the request log

        def decode(signature: Signature) -> Decoded:
            inputs = request_body.rest_inputs(parsed, signature, limits)
            return inputs if logged is None else logged.capture(inputs)

        def encode(result: PredictResult) -> RestResponse:
            if logged is not None and record is not None:
                target, options = parsed.call.target, parsed.call.options
                ref = ModelRef(target.name, target.version, target.label)
                filtered = parsed.call.output_filter()
                logged.tensors(record, ref, options.signature_name, filtered, result, len(body))
            return response_body.infer_body(
                parsed.call, result.model, result.version, result.outputs
            )

        own = parsed.call.deadline(time.monotonic(), transport_deadline)
        deadline = transport_deadline if own is None else own
        answer = await bounds.until(
            deadline, self._plane.infer(parsed.call, decode, encode, deadline)
        )
        return _answer(answer)

    # -- extensions -----------------------------------------------------------------------------
    async def _statistics(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        figures = self._plane.statistics(call.model, call.version)
        return _json(stats.statistics_json(figures))

    async def _index(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        ready_only = repository_codec.index_ready_only(await _body_json(request, bounds))
        return _json(
            repository_codec.index_json(self._plane.repository.index(ready_only=ready_only))
        )

    async def _load(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        document = await _body_json(request, bounds)
        asked = repository_codec.call_from_json(call.model, document, unload=False)
        await self._plane.load(asked, request.headers.get(AUTHORIZATION))
        return HttpResponse(200, b"", None)

    async def _unload(self, request: HttpRequest, call: V2Call, bounds: CallBounds) -> Any:
        document = await _body_json(request, bounds)
        asked = repository_codec.call_from_json(call.model, document, unload=True)
        await self._plane.unload(asked, request.headers.get(AUTHORIZATION))
        return HttpResponse(200, b"", None)


def failure(error: ServingError) -> HttpResponse:
    """A failed V2 call's answer (see the module doc); carries its code for observability."""
    return failure_response(error, errors.v2_http_status(error.code))


def _health_status(answer: bool) -> int:
    return 200 if answer else errors.HEALTH_FALSE_STATUS


def _json(document: Any, status: int = 200) -> HttpResponse:
    return _answer(response_body.json_response(document), status)


def _answer(answer: RestResponse, status: int = 200) -> HttpResponse:
    """The HTTP answer of a V2 body (its ``Content-Type`` among its headers)."""
    headers = dict(answer.headers)
    content_type = headers.pop("Content-Type", None)
    return HttpResponse(status, answer.body, content_type, headers or None)


async def _body_json(request: HttpRequest, bounds: CallBounds) -> Any:
    """The body's JSON, None when it is empty; INVALID_ARGUMENT when it is not JSON or is over
    ``--rest_api_max_json_bytes`` (:meth:`CallBounds.check_json`, as infer's)."""
    body = await bounds.read_body(request)
    bounds.check_json(len(body))
    if not body.strip():
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidArgument(f"the request body is not valid JSON: {exc}") from None
