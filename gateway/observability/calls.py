"""One gRPC or REST call as observability sees it: its :class:`Call`, opened and closed by the
transport hooks (:mod:`~gateway.observability.grpc_hook`, :mod:`~gateway.observability.rest_hook`).

While a call's handler runs, :data:`CURRENT` holds its :class:`Call`, so the batch queue's
observer (:mod:`~gateway.observability.batches`), which runs in the request's task at enqueue
time, can tie the request to its batch, and log records carry its trace ids. Closing a call
records TF Serving's request metrics (as the transport upstream would: see :meth:`Recorder.end`),
tensorgate's call duration, and exports its spans.
"""

from __future__ import annotations

import time
from contextvars import ContextVar, Token
from dataclasses import dataclass

from opentelemetry.trace import SpanKind

from channel.logs import TRACE_IDS, Traced
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.span_records import Attributes, ServerSpan
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.tracing import Tracing

RUNTIME_APIS = frozenset({"Predict", "Classify", "Regress"})
"""The APIs TF Serving records ``runtime_latency`` for (its predict/classifier/regressor)."""


@dataclass(slots=True, eq=False)
class Call:
    """A call being handled. ``api``: the method (``Predict``, ``GetModelStatus``, ...; REST
    verbs are mapped to the same names); ``entrypoint``: ``GRPC`` or ``REST``; ``start``:
    ``time.perf_counter()`` at its handler's start; ``span``: its server span when sampled."""

    api: str
    entrypoint: str
    start: float
    span: ServerSpan | None = None
    ids_token: Token[Traced | None] | None = None


CURRENT: ContextVar[Call | None] = ContextVar("tensorgate_call", default=None)


class Recorder:
    """Opens and closes calls against whichever of TF metrics, tensorgate metrics and tracing
    are on (at least one)."""

    def __init__(
        self, tfs: TfServingMetrics | None, metrics: GatewayMetrics | None, tracing: Tracing | None
    ) -> None:
        self.tfs = tfs
        self.metrics = metrics
        self.tracing = tracing
        self.needs_parent = metrics is None and tracing is not None and not tracing.roots
        """True when only a sampled parent can make a call worth opening (no metrics, and the
        sampler never samples a root): the hooks then pass calls without a traceparent through
        untouched."""

    def begin(
        self,
        api: str,
        entrypoint: str,
        span_name: str,
        traceparent: str | None,
        tracestate: str | None,
        attributes: Attributes,
    ) -> tuple[Call, Token[Call | None]]:
        """Open a call and make it :data:`CURRENT`; pass the token to :meth:`end`.
        ``attributes``: the server span's first attributes (kept, not copied: leave them
        unchanged)."""
        call = Call(api, entrypoint, time.perf_counter())
        if self.tracing is not None and (traceparent or self.tracing.roots):
            call.span = self.tracing.start(
                span_name,
                SpanKind.SERVER,
                time.time_ns(),
                traceparent,
                tracestate,
                attributes,
            )
            if call.span is not None:
                call.ids_token = TRACE_IDS.set(call.span)
        if self.metrics is not None:
            self.metrics.in_flight[entrypoint] += 1
        return call, CURRENT.set(call)

    def end(
        self,
        call: Call,
        token: Token[Call | None],
        *,
        model: str,
        status: str,
        latency_api: str | None,
        error: str | None = None,
        attributes: Attributes | None = None,
    ) -> None:
        """Close ``call`` with canonical ``status`` (``OK``, ``NOT_FOUND``, ...) for ``model``.

        ``latency_api``: the ``API`` label of TF's ``request_count`` / ``request_latency``
        (upstream records both for this call; latency only when OK), or None when upstream records
        neither. ``error``: the span's error description (None: not an error on the server's
        side). ``attributes``: added to the server span.
        """
        CURRENT.reset(token)
        elapsed_s = time.perf_counter() - call.start
        if call.ids_token is not None:
            TRACE_IDS.reset(call.ids_token)
        if self.tfs is not None and latency_api is not None:
            self.tfs.request_count.inc((model, status))
            if status == "OK":
                labels = (model, latency_api, call.entrypoint)
                self.tfs.request_latency.observe(labels, int(elapsed_s * 1e6))
        if self.metrics is not None:
            self.metrics.in_flight[call.entrypoint] -= 1
            labels = (model, call.api, call.entrypoint)
            self.metrics.request_duration.observe(labels, elapsed_s)
        span = call.span
        if span is not None and self.tracing is not None:
            span.attributes = {**span.attributes, "tensorgate.model": model, **(attributes or {})}
            self.tracing.end(span, time.time_ns(), error)
