"""The REST side: a middleware around TF Serving's ``/v1/`` API of the REST server.

Each API call (any path under ``/v1/``, as TF Serving's dispatcher) gets a server span named
``<METHOD> <route>`` (continuing a W3C ``traceparent`` header; attributes from OpenTelemetry's HTTP
conventions) and the metrics TF Serving's ``http_server.cc`` records: ``request_count``
{model_name, status} for every call, and ``request_latency`` {model_name, API, entrypoint="REST"}
when the answer is 200, where ``API`` is the verb as upstream's URL regex captures it
(``predict``, ``classify``, ``regress``; empty for status and metadata GETs). Other paths (probes,
the metrics page) pass untouched.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from gateway.errors import ServingError
from gateway.observability.calls import Recorder
from gateway.tfserving.rest import paths
from gateway.tfserving.rest.server import STATUS_KEY, ExtraRoute, Middleware
from gateway.transport.http.front import parse_once

APIS = {
    "predict": "Predict",
    "classify": "Classify",
    "regress": "Regress",
    "metadata": "GetModelMetadata",
    "status": "GetModelStatus",
}
"""REST verbs as the gRPC method names (tensorgate's ``api`` label, the runtime API)."""


def middleware(recorder: Recorder) -> Middleware:
    """The middleware recording into ``recorder``."""

    async def observe(request: web.BaseRequest, handler: ExtraRoute) -> web.StreamResponse:
        path = request.raw_path.partition("?")[0]
        traceparent = request.headers.get("traceparent")
        if not paths.is_api_path(path) or (traceparent is None and recorder.needs_parent):
            return await handler(request)
        try:
            parsed: paths.RestCall | None = parse_once(request, path)
        except ServingError:
            parsed = None
        model = parsed.model if parsed is not None else ""
        verb = parsed.verb if parsed is not None else ""
        route = _route(request.method, parsed)
        attributes = {
            "http.request.method": request.method,
            "url.path": path,
            "url.scheme": request.scheme,
            "network.protocol.version": f"{request.version.major}.{request.version.minor}",
        }
        if route:
            attributes["http.route"] = route
        call, token = recorder.begin(
            APIS.get(verb, "unknown"),
            "REST",
            f"{request.method} {route}" if route else request.method,
            traceparent,
            request.headers.get("tracestate"),
            attributes,
        )
        status, http = "INTERNAL", 500
        try:
            response = await handler(request)
            http = response.status
            status = response.get(STATUS_KEY, "OK" if http < 400 else "UNKNOWN")
            return response
        except asyncio.CancelledError:
            status, http = "CANCELLED", 499
            raise
        finally:
            recorder.end(
                call,
                token,
                model=model,
                status=status,
                latency_api=verb if verb in ("predict", "classify", "regress") else "",
                error=f"HTTP {http}" if http >= 500 else None,
                attributes=None if call.span is None else {"http.response.status_code": http},
            )

    return observe


def _route(method: str, call: paths.RestCall | None) -> str:
    """The URL template of a parsed call (OpenTelemetry's ``http.route``); "" if unparsed."""
    if call is None:
        return ""
    route = "/v1/models/{model_name}"
    if call.version is not None:
        route += "/versions/{version}"
    elif call.label is not None:
        route += "/labels/{label}"
    if method == "POST":
        return f"{route}:{call.verb}"
    return route + "/metadata" if call.verb == "metadata" else route
