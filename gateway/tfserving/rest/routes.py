"""TF Serving's REST API: the ``/v1/`` routes, registered with the HTTP server core
(:class:`~gateway.transport.http.server.HttpServer`), a few lines each — convert in
(:mod:`gateway.tfserving.rest.json_request`), await the core, convert out:

- ``POST /v1/models/{m}[/versions/{v}|/labels/{l}]:predict`` (and ``:classify``, ``:regress``
  through the ``classify_regress`` hook; without one they answer 501);
- ``GET .../{m}[...]`` (status) and ``GET .../metadata``.

The grammar is :mod:`gateway.tfserving.rest.paths`, applied once per request
(:meth:`TfServingRest.parse`): a path under ``/v1/`` outside it is TF Serving's 400 ``Malformed
request``, or 405 with ``Allow`` when the path is in the grammar for another method. Each call's
body and deadline are the core's :class:`~gateway.transport.http.bounds.CallBounds`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.errors import ServingError, Unimplemented
from gateway.observability.request_log import REST_LOG
from gateway.serving.core import ModelRef, PredictResult, ServingCore
from gateway.serving.inputs import ConvertedInputs, Decoded
from gateway.serving.signature import Signature
from gateway.tfserving import PROTOCOL, prediction_log
from gateway.tfserving.codec import service_messages
from gateway.tfserving.rest import json_request, json_response, paths
from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.front import HttpError
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.routes import UNKNOWN_API, ApiCall

ClassifyRegress = Callable[[str, ModelRef, dict[str, Any], float], Awaitable[dict[str, Any]]]
"""``(method: "classify" | "regress", ref, parsed JSON body, deadline) -> JSON-able dict``; raises
ServingError for failures. ``deadline`` is in ``time.monotonic()`` seconds."""

APIS = {
    "predict": "Predict",
    "classify": "Classify",
    "regress": "Regress",
    "metadata": "GetModelMetadata",
    "status": "GetModelStatus",
}
"""REST verbs as the gRPC method names (what call records name the API)."""


class TfServingRest:
    """TF Serving's REST API over one :class:`ServingCore` (an
    :class:`~gateway.transport.http.routes.HttpApi`).

    ``max_elements``: largest element count of one input tensor. ``max_request_bytes``: most bytes
    one request's decoded tensors may take (None: no bound). ``classify_regress``: serves
    ``:classify`` / ``:regress`` (None: 501).
    """

    def __init__(
        self,
        core: ServingCore,
        *,
        max_elements: int,
        max_request_bytes: int | None = None,
        classify_regress: ClassifyRegress | None = None,
    ) -> None:
        if max_elements < 1:
            raise ValueError(f"max_elements must be >= 1, got {max_elements}")
        self._core = core
        self._max_elements = max_elements
        self._max_request_bytes = max_request_bytes
        self._classify_regress = classify_regress

    def owns(self, path: str) -> bool:
        return paths.is_api_path(path)

    def parse(self, method: str, path: str) -> ApiCall[paths.RestCall]:
        """The call of one request line; a refusal (400 ``Malformed request``, 405) is kept."""
        try:
            if method not in ("GET", "POST"):
                allowed = paths.allowed_method(path)
                if allowed is not None:
                    raise HttpError(
                        405, f"this path answers {allowed}, not {method}", Allow=allowed
                    )
            call = paths.parse(method, path)
        except (ServingError, HttpError) as exc:
            return ApiCall(PROTOCOL, UNKNOWN_API, refusal=exc)
        return ApiCall(
            PROTOCOL,
            APIS[call.verb],
            call.model,
            call.version,
            paths.route(method, call),
            detail=call,
        )

    async def serve(
        self, request: HttpRequest, call: ApiCall[paths.RestCall], bounds: CallBounds
    ) -> HttpResponse:
        rest = call.detail
        if rest is None:
            raise ValueError("a refused call is not served")
        ref = ModelRef(rest.model, rest.version, rest.label)
        if rest.verb == "status":
            return self._status(rest)
        if rest.verb == "metadata":
            return self._metadata(ref)
        body = await bounds.read_body(request)
        bounds.check_json(len(body))
        deadline = bounds.deadline()
        if rest.verb == "predict":
            return await self._predict(ref, body, deadline, bounds)
        return await self._classify_or_regress(rest.verb, ref, body, deadline, bounds)

    # -- routes ---------------------------------------------------------------------------------
    async def _predict(
        self, ref: ModelRef, body: bytes, deadline: float, bounds: CallBounds
    ) -> HttpResponse:
        if json_request.read_off_loop(body):  # a large body: the loop serves others meanwhile
            request = await asyncio.to_thread(json_request.loads, body, tensors=True)
        else:
            request = json_request.loads(body, tensors=True)
        name = json_request.signature_name(request)
        formats: list[json_request.Format] = []
        logged = REST_LOG.get()  # this call's record to be, when the request log sampled it
        request_bytes = len(body)

        def decode(signature: Signature) -> Decoded:
            inputs, fmt = json_request.predict_inputs(
                request,
                signature,
                max_elements=self._max_elements,
                max_bytes=self._max_request_bytes,
            )
            formats.append(fmt)
            converted = ConvertedInputs(inputs)
            return converted if logged is None else logged.capture(converted)

        def encode(result: PredictResult) -> bytes:
            if logged is not None:
                logged.tensors(prediction_log.tensors, ref, name, (), result, request_bytes)
            return json_response.predict_json(result.outputs, formats[0])

        body = await bounds.until(
            deadline, self._core.predict(ref, name, decode, encode, (), deadline)
        )
        return HttpResponse(200, body)

    async def _classify_or_regress(
        self, method: str, ref: ModelRef, body: bytes, deadline: float, bounds: CallBounds
    ) -> HttpResponse:
        if self._classify_regress is None:
            raise Unimplemented(f"{method.capitalize()} is not implemented yet by tensorgate")
        request = json_request.loads(body)
        result = await bounds.until(
            deadline, self._classify_regress(method, ref, request, deadline)
        )
        return HttpResponse(200, json_response.dumps(result))

    def _status(self, call: paths.RestCall) -> HttpResponse:
        statuses = self._core.status(call.model, call.version, call.label)
        body = json_response.status_body(service_messages.status_response(call.model, statuses))
        return HttpResponse(200, body)

    def _metadata(self, ref: ModelRef) -> HttpResponse:
        servable, signatures = self._core.metadata(ref)
        response = service_messages.metadata_response(servable.model, servable.version, signatures)
        return HttpResponse(200, json_response.metadata_body(response))
