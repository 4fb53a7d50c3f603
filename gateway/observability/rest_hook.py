"""The REST side: an observer around each API call of the HTTP server
(:data:`~gateway.transport.http.routes.Observe`), whatever the protocol.

The call's meaning comes from its API's parse of the request line
(:class:`~gateway.transport.http.routes.ApiCall`: protocol, method name, model, version, URL
template), never from parsing URLs here. Each call gets a server span named
``<METHOD> <route>`` (continuing a W3C ``traceparent`` header; attributes from OpenTelemetry's
HTTP conventions) and a call record (TF Serving's REST metrics are an output format of these
records: :meth:`~gateway.observability.tfs_metrics.TfServingMetrics.record_call`); with
``--enable_server_timing`` each answer gets a ``Server-Timing`` header
(:mod:`~gateway.observability.server_timing`). With request logging, each call runs through
:meth:`RequestLog.logged <gateway.observability.request_log.RequestLog.logged>`, which logs a
sampled call its API's handler served. Exact routes and probes (the metrics page, ``/healthz``)
are not API calls and pass untouched.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from gateway.observability import server_timing
from gateway.observability.calls import Recorder
from gateway.observability.request_log import RequestLog
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.routes import Answer, ApiCall, Observe


def observer(recorder: Recorder | None, request_log: RequestLog | None = None) -> Observe:
    """The observer recording into ``recorder`` (and, with ``recorder.timing``, putting a
    ``Server-Timing`` header on every answer not yet sent) and logging into ``request_log``
    (either may be None, not both)."""
    if recorder is None:
        if request_log is None:
            raise ValueError("nothing to observe")
        logged = request_log.logged

        async def only_log(request: HttpRequest, api: ApiCall[Any], answer: Answer) -> HttpResponse:
            return await logged(api.model, answer)

        return only_log
    timed = recorder.timing

    async def observe(request: HttpRequest, api: ApiCall[Any], answer: Answer) -> HttpResponse:
        if request_log is not None:  # the request log's view of the call is the answer's
            answer = functools.partial(request_log.logged, api.model, answer)
        traceparent = request.headers.get("traceparent")
        if traceparent is None and recorder.needs_parent:
            return await answer()
        route = api.route
        attributes = {
            "http.request.method": request.method,
            "url.path": request.path,
            "url.scheme": request.scheme,
            "network.protocol.version": request.version,
        }
        if route:
            attributes["http.route"] = route
        call, token = recorder.begin(
            api.protocol,
            api.api,
            "REST",
            f"{request.method} {route}" if route else request.method,
            traceparent,
            request.headers.get("tracestate"),
            attributes,
        )
        call.model, call.version = api.model, api.version
        http = 500
        call.status = "INTERNAL"
        try:
            response = await answer()
            if timed:
                response.set_header(server_timing.HEADER, server_timing.value(call))
            http = response.status
            call.status = response.code or ("OK" if http < 400 else "UNKNOWN")
            return response
        except asyncio.CancelledError:
            call.status, http = "CANCELLED", 499
            raise
        finally:
            recorder.end(
                call,
                token,
                error=f"HTTP {http}" if http >= 500 else None,
                attributes=None if call.span is None else {"http.response.status_code": http},
            )

    return observe
