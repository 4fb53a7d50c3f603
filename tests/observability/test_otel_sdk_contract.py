"""The OpenTelemetry SDK's private members tensorgate's span export relies on, on real SDK objects.

:mod:`gateway.observability.span_export` reaches into the SDK's OTLP exporters and batch span
processor (its encoder is tensorgate's own, :mod:`~gateway.observability.otlp_wire`: see
``bench/results/2026-11-28-otlp/``). Each test names the member and what uses it, so an SDK
upgrade that moves one fails here, by name, rather than somewhere in an export.
"""

from __future__ import annotations

import collections
import importlib
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as SdkGrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as SdkHttpExporter,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def _member(owner: object, name: str, user: str) -> Any:
    """``owner.name``, failing with a message that names the member and its user."""
    kind = type(owner).__qualname__ if not inspect.isclass(owner) else owner.__qualname__
    assert hasattr(owner, name), (
        f"OpenTelemetry SDK: {kind}.{name} is gone; {user} in "
        "gateway/observability/span_export.py relies on it"
    )
    return getattr(owner, name)


def _parameters(function: Any, names: tuple[str, ...], member: str) -> None:
    """``function`` takes the keyword ``names`` (``member`` names it in the failure)."""
    taken = inspect.signature(function).parameters
    missing = [n for n in names if n not in taken]
    assert not missing, f"OpenTelemetry SDK: {member} no longer takes {', '.join(missing)}"


@pytest.fixture
def http_exporter() -> Iterator[SdkHttpExporter]:
    exporter = SdkHttpExporter(endpoint="http://127.0.0.1:9/v1/traces")
    yield exporter
    exporter.shutdown()


def test_the_http_transport_modules_and_their_classes() -> None:
    """``HttpSpanExporter`` swaps the SDK's requests transport for its urllib3 one."""
    modules = {
        "opentelemetry.exporter.http.transport._requests": "RequestsHTTPTransport",
        "opentelemetry.exporter.http.transport._urllib3": "Urllib3HTTPTransport",
    }
    for module, name in modules.items():
        try:
            found = importlib.import_module(module)
        except ImportError as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"OpenTelemetry SDK: module {module} is gone ({exc})")
        _member(found, name, "HttpSpanExporter.__init__")
    from opentelemetry.exporter.http.transport._urllib3 import Urllib3HTTPTransport

    _parameters(Urllib3HTTPTransport, ("verify", "cert"), "Urllib3HTTPTransport()")


def test_the_http_exporter_s_client_transport_and_session(http_exporter: SdkHttpExporter) -> None:
    """``HttpSpanExporter.__init__`` reads ``_client._transport._session.verify / .cert`` and
    assigns ``_client._transport``; ``_transport`` is a constructor keyword it looks for."""
    from opentelemetry.exporter.http.transport._requests import RequestsHTTPTransport

    client = _member(http_exporter, "_client", "HttpSpanExporter")
    transport = _member(client, "_transport", "HttpSpanExporter.__init__")
    assert isinstance(transport, RequestsHTTPTransport), (
        f"OpenTelemetry SDK: the OTLP/HTTP exporter's default transport is {type(transport)}, "
        "not RequestsHTTPTransport (HttpSpanExporter.__init__ replaces that one)"
    )
    session = _member(transport, "_session", "HttpSpanExporter.__init__")
    for name in ("verify", "cert"):
        _member(session, name, "HttpSpanExporter.__init__")
    _parameters(SdkHttpExporter.__init__, ("session", "_transport"), "OTLPSpanExporter (HTTP)")


def test_the_http_exporter_s_state_limits_metrics_and_send(
    http_exporter: SdkHttpExporter,
) -> None:
    """``HttpSpanExporter._post`` reads ``_shutdown`` and ``_max_request_size``, counts through
    ``_metrics.export_operation(n)`` (a context manager whose result takes ``error`` and
    ``error_attrs``) and sends with ``_client.export(data)``, whose answer has ``success``,
    ``error`` and ``status_code``."""
    assert _member(http_exporter, "_shutdown", "HttpSpanExporter._post") is False
    assert isinstance(_member(http_exporter, "_max_request_size", "HttpSpanExporter._post"), int)
    metrics = _member(http_exporter, "_metrics", "HttpSpanExporter._post")
    with _member(metrics, "export_operation", "HttpSpanExporter._post")(1) as result:
        result.error = None
        result.error_attrs = None
    client = _member(http_exporter, "_client", "HttpSpanExporter._post")
    _parameters(_member(client, "export", "HttpSpanExporter._post"), ("data",), "_client.export")
    from opentelemetry.exporter.otlp.common.http import _ExportResult

    fields = {f for f in _ExportResult.__dataclass_fields__}
    assert {"success", "error", "status_code"} <= fields, (
        f"OpenTelemetry SDK: _client.export's result has fields {sorted(fields)}; "
        "HttpSpanExporter._post reads success, error and status_code"
    )


def test_the_grpc_exporter_s_export_hooks() -> None:
    """``GrpcSpanExporter`` hands ``_export`` an encoded request, and overrides the hooks it
    calls, ``_translate_data(data)`` and ``_count_data(data)``."""
    for name in ("_export", "_translate_data", "_count_data"):
        method = _member(SdkGrpcExporter, name, "GrpcSpanExporter")
        _parameters(method, ("self", "data"), f"OTLPSpanExporter (gRPC).{name}")
    source = inspect.getsource(SdkGrpcExporter._export)
    for hook in ("self._translate_data(data)", "self._count_data(data)"):
        assert hook in source, (
            f"OpenTelemetry SDK: the gRPC exporter's _export no longer calls {hook}, which "
            "GrpcSpanExporter overrides to send its own encoding"
        )


def test_the_batch_processor_s_queue_pid_shutdown_and_batch_size() -> None:
    """``RecordSpanProcessor.on_end`` reads ``_batch_processor``'s ``_pid``, ``_shutdown``,
    ``_max_export_batch_size`` and ``_queue`` (a deque it ``appendleft``\\s to, as ``emit``
    does), else calls its ``emit``."""
    processor = BatchSpanProcessor(InMemorySpanExporter(), max_export_batch_size=8)
    try:
        batch = _member(processor, "_batch_processor", "RecordSpanProcessor.on_end")
        assert isinstance(_member(batch, "_pid", "RecordSpanProcessor.on_end"), int)
        assert _member(batch, "_shutdown", "RecordSpanProcessor.on_end") is False
        assert _member(batch, "_max_export_batch_size", "RecordSpanProcessor.on_end") == 8
        queue = _member(batch, "_queue", "RecordSpanProcessor.on_end")
        assert isinstance(queue, collections.deque), (
            f"OpenTelemetry SDK: the batch processor's _queue is a {type(queue)}, not a deque"
        )
        first, second = object(), object()
        _member(batch, "emit", "RecordSpanProcessor.on_end")(first)
        batch.emit(second)
        assert list(queue) == [second, first], (
            "OpenTelemetry SDK: the batch processor's emit no longer appends to the left of "
            "_queue, where RecordSpanProcessor.on_end puts records"
        )
        queue.clear()
    finally:
        processor.shutdown()


def test_a_readable_span_takes_what_span_forms_give_it() -> None:
    """:class:`~gateway.observability.span_records.SpanForms` makes ``ReadableSpan`` values
    with these keywords (public, but the shape the encoder and exporters read)."""
    _parameters(
        ReadableSpan.__init__,
        (
            "name",
            "context",
            "parent",
            "resource",
            "attributes",
            "links",
            "kind",
            "status",
            "start_time",
            "end_time",
            "instrumentation_scope",
        ),
        "ReadableSpan()",
    )
