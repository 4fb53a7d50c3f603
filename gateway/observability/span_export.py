"""Span export: the OTLP exporters with :mod:`~gateway.observability.otlp_wire`'s encoding, and
:class:`RecordExporter`, through which every exporter receives the request path's records.

:class:`HttpSpanExporter` and :class:`GrpcSpanExporter` are the SDK's OTLP exporters (same
``OTEL_EXPORTER_OTLP_*`` configuration, transport, retries and metrics) with only the encoding
replaced; both also take records whole (``export_records``) and write their spans' bytes without
making span objects. :class:`RecordExporter` sits between the SDK's span processor (which queues
records, ``OTEL_BSP_*``) and the configured exporter, on the processor's export thread: records
go to an exporter that takes them, else as ``ReadableSpan`` values, at most
``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` spans per export call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.exporter.http.transport._requests import RequestsHTTPTransport
from opentelemetry.exporter.http.transport._urllib3 import Urllib3HTTPTransport
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as SdkGrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as SdkHttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.semconv.attributes.http_attributes import HTTP_RESPONSE_STATUS_CODE

from gateway.observability.otlp_wire import encode_records, encode_request
from gateway.observability.span_records import Record, SpanForms, span_count

_CREDENTIAL_PROVIDERS = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)
"""Variables that give the SDK's OTLP/HTTP exporter a ``requests`` session of the user's."""
DEFAULT_EXPORT_BATCH = 512
"""``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``'s default (the SDK's)."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """A serialized ``ExportTraceServiceRequest`` of ``count`` spans."""

    data: bytes
    count: int


def _encoded(records: Sequence[Record], forms: SpanForms, count: int) -> Encoded | None:
    """:func:`encode_records` of ``records`` (``count`` spans), or None when a value cannot be
    encoded (then the exporter hands the spans to the SDK's encoder, which logs and drops what
    it cannot)."""
    try:
        return Encoded(encode_records(records, forms), count)
    except (TypeError, ValueError, AttributeError, KeyError):
        return None


def _spans(records: Sequence[Record], forms: SpanForms) -> list[ReadableSpan]:
    return [span for record in records for span in forms.spans(record)]


class HttpSpanExporter(SdkHttpExporter):
    """The SDK's OTLP/HTTP span exporter, encoding with :func:`encode_request`, and taking
    records whole (:meth:`export_records`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        transport = self._client._transport
        credentials = any(os.environ.get(name) for name in _CREDENTIAL_PROVIDERS)
        custom = kwargs.get("session") is not None or "_transport" in kwargs or credentials
        if isinstance(transport, RequestsHTTPTransport) and not custom:
            # Post through urllib3 (what requests itself sends through) for less CPU per post;
            # the TLS settings carry over.
            session = transport._session
            self._client._transport = Urllib3HTTPTransport(verify=session.verify, cert=session.cert)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            encoded = Encoded(encode_request(spans), len(spans))
        except (TypeError, ValueError, AttributeError):
            return super().export(spans)  # the SDK's answer: its own error
        return self._post(encoded) or super().export(spans)

    def export_records(
        self, records: Sequence[Record], forms: SpanForms, count: int
    ) -> SpanExportResult:
        """Export the ``count`` spans of ``records``."""
        encoded = _encoded(records, forms, count)
        result = None if encoded is None else self._post(encoded)
        return result or self.export(_spans(records, forms))

    def _post(self, encoded: Encoded) -> SpanExportResult | None:
        """Send ``encoded``; None when the SDK should answer instead (shut down: a warning;
        over ``_max_request_size``: its error)."""
        data = encoded.data
        if self._shutdown or not data or 0 < self._max_request_size < len(data):
            return None
        with self._metrics.export_operation(encoded.count) as result:
            sent = self._client.export(data)
            if not sent.success:
                result.error = sent.error
                if sent.status_code is not None:
                    result.error_attrs = {HTTP_RESPONSE_STATUS_CODE: sent.status_code}
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS


class GrpcSpanExporter(SdkGrpcExporter):
    """The SDK's OTLP/gRPC span exporter, encoding with :func:`encode_request` or
    :func:`encode_records` (parsed back into the request message in C, which the gRPC stub
    then serializes)."""

    def export_records(
        self, records: Sequence[Record], forms: SpanForms, count: int
    ) -> SpanExportResult:
        """Export the ``count`` spans of ``records``."""
        encoded = _encoded(records, forms, count)
        if encoded is None:
            return self.export(_spans(records, forms))
        return self._export(encoded)  # type: ignore[arg-type]

    def _translate_data(self, data: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
        raw = data.data if isinstance(data, Encoded) else encode_request(data)
        return ExportTraceServiceRequest.FromString(raw)

    def _count_data(self, data: Sequence[ReadableSpan]) -> int:
        return data.count if isinstance(data, Encoded) else len(data)


WIRE_ENCODED: dict[type, type] = {
    SdkHttpExporter: HttpSpanExporter,
    SdkGrpcExporter: GrpcSpanExporter,
}
"""The SDK's OTLP exporter classes (as the ``opentelemetry_traces_exporter`` entry points load
them) → their wire-encoding subclasses."""


class RecordExporter(SpanExporter):
    """Hands records to ``exporter`` (see the module doc). ``resource``: the gateway's, from
    which the worker spans' resources are made; ``env``: where ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``
    is read."""

    def __init__(
        self, exporter: SpanExporter, resource: Resource, env: Mapping[str, str] = os.environ
    ) -> None:
        self.exporter = exporter
        self.forms = SpanForms(resource)
        self._takes_records = isinstance(exporter, HttpSpanExporter | GrpcSpanExporter)
        try:
            limit = int(env.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", DEFAULT_EXPORT_BATCH))
        except ValueError:
            limit = DEFAULT_EXPORT_BATCH  # the SDK's span processor warns about it
        self.max_spans = max(1, limit)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export ``spans`` (records, as the span processor queued them)."""
        records: Sequence[Record] = spans  # type: ignore[assignment]
        result = SpanExportResult.SUCCESS
        for chunk, count in self._chunks(records):
            if self._takes_records:
                exporter: HttpSpanExporter | GrpcSpanExporter = self.exporter  # type: ignore[assignment]
                outcome = exporter.export_records(chunk, self.forms, count)
            else:
                outcome = self.exporter.export(_spans(chunk, self.forms))
            if outcome is not SpanExportResult.SUCCESS:
                result = outcome
        return result

    def _chunks(self, records: Sequence[Record]) -> list[tuple[Sequence[Record], int]]:
        """``records`` cut so that no piece holds more than :attr:`max_spans` spans (a record
        is never cut: one of more spans goes alone), each with its span count."""
        chunks: list[tuple[Sequence[Record], int]] = []
        first = spans = 0
        for index, record in enumerate(records):
            count = span_count(record)
            if spans and spans + count > self.max_spans:
                chunks.append((records[first:index], spans))
                first, spans = index, 0
            spans += count
        if first < len(records):
            chunks.append((records[first:], spans))
        return chunks

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)


_PID = [os.getpid()]
"""This process's id, kept current by a fork hook (read per record instead of a system call)."""
os.register_at_fork(after_in_child=lambda: _PID.__setitem__(0, os.getpid()))


class RecordSpanProcessor(BatchSpanProcessor):
    """The SDK's batch span processor (its ``OTEL_BSP_*`` settings, queue, export thread and
    metrics) for the request path's records, all of sampled requests. While the queue holds fewer
    than an export batch, :meth:`on_end` only queues a record (no sampled check, no
    ``os.getpid()``); any other case (shut down, forked, a batch's worth queued: the export
    thread is woken) goes through the SDK's ``emit``."""

    def on_end(self, span: ReadableSpan) -> None:
        batch = self._batch_processor
        queue = batch._queue
        if (
            batch._pid == _PID[0]
            and not batch._shutdown
            and len(queue) < batch._max_export_batch_size - 1
        ):
            queue.appendleft(span)
            return
        batch.emit(span)
