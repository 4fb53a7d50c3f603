"""The REST observer: each API call's record and server span, from its API's parse of the request
line (never from parsing URLs here), and its answer's status."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.errors import NotFound, Unavailable
from gateway.observability.calls import Recorder
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.rest_hook import observer
from gateway.observability.span_export import RecordExporter
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.tracing import Sampling, Tracing, default_resource
from gateway.transport.http.http_messages import HttpResponse
from gateway.transport.http.json_error import failure_response
from gateway.transport.http.routes import UNKNOWN_API, ApiCall
from tests.support.rest import made_request

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
PREDICT: ApiCall[Any] = ApiCall(
    "tfserving", "Predict", "m", 2, "/v1/models/{model_name}/versions/{version}:predict"
)


def _recorder(ratio: float, metrics: bool = True) -> tuple[Recorder, InMemorySpanExporter]:
    exporter, resource = InMemorySpanExporter(), default_resource()
    tracing = Tracing(
        SimpleSpanProcessor(RecordExporter(exporter, resource)), Sampling(True, ratio), resource
    )
    recorder = (
        Recorder(TfServingMetrics(), GatewayMetrics(), tracing)
        if metrics
        else Recorder(None, None, tracing)
    )
    recorder.models_changed(["m"])
    return recorder, exporter


async def _observe(
    recorder: Recorder, call: ApiCall[Any], answer: Any, headers: dict[str, str] | None = None
) -> HttpResponse:
    request = made_request("POST", "/v1/models/m/versions/2:predict?x=1", headers)

    async def respond() -> HttpResponse:
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return await observer(recorder)(request, call, respond)


async def test_a_call_is_recorded_with_its_api_s_meaning_and_its_answer() -> None:
    recorder, exporter = _recorder(1.0)
    assert (
        await _observe(recorder, PREDICT, HttpResponse(), {"traceparent": TRACEPARENT})
    ).status == 200
    missing = await _observe(recorder, PREDICT, failure_response(NotFound("no")))
    assert missing.status == 404
    assert recorder.tfs is not None and recorder.metrics is not None
    assert dict(recorder.tfs.request_count.items()) == {("m", "OK"): 1, ("m", "NOT_FOUND"): 1}
    assert [labels for labels, _ in recorder.tfs.request_latency.items()] == [
        ("m", "predict", "REST")
    ]
    ok, failed = exporter.get_finished_spans()
    assert ok.name == "POST /v1/models/{model_name}/versions/{version}:predict"
    assert ok.parent is not None and failed.parent is None
    assert dict(ok.attributes or {}) == {
        "http.request.method": "POST",
        "url.path": "/v1/models/m/versions/2:predict",
        "url.scheme": "http",
        "network.protocol.version": "1.1",
        "http.route": "/v1/models/{model_name}/versions/{version}:predict",
        "tensorgate.model": "m",
        "http.response.status_code": 200,
    }
    assert (failed.attributes or {})["http.response.status_code"] == 404


async def test_an_unparsed_call_and_a_cancelled_one() -> None:
    recorder, exporter = _recorder(1.0)
    unparsed: ApiCall[Any] = ApiCall("tfserving", UNKNOWN_API)
    assert (await _observe(recorder, unparsed, HttpResponse(405))).status == 405
    with pytest.raises(asyncio.CancelledError):
        await _observe(recorder, PREDICT, asyncio.CancelledError())
    assert recorder.tfs is not None and recorder.metrics is not None
    assert dict(recorder.tfs.request_count.items()) == {("", "UNKNOWN"): 1, ("m", "CANCELLED"): 1}
    durations = [labels for labels, _ in recorder.metrics.request_duration.items()]
    assert durations == [
        ("", "unknown", "REST", "tfserving"),
        ("m", "Predict", "REST", "tfserving"),
    ]
    method_only, cancelled = exporter.get_finished_spans()
    assert method_only.name == "POST" and "http.route" not in (method_only.attributes or {})
    assert (cancelled.attributes or {})["http.response.status_code"] == 499
    assert cancelled.status.status_code.name == "UNSET"  # a client's leaving, not an error
    await _observe(recorder, PREDICT, failure_response(Unavailable("later")))
    assert exporter.get_finished_spans()[-1].status.description == "HTTP 503"


async def test_at_ratio_0_without_metrics_a_call_without_a_parent_passes_untouched() -> None:
    recorder, exporter = _recorder(0.0, metrics=False)
    await _observe(recorder, PREDICT, HttpResponse())
    assert exporter.get_finished_spans() == ()
    await _observe(recorder, PREDICT, HttpResponse(), {"traceparent": TRACEPARENT})
    assert len(exporter.get_finished_spans()) == 1
