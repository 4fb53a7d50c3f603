"""Opening and closing calls: the :class:`Recorder` the transport hooks
(:mod:`~gateway.observability.grpc_hook`, :mod:`~gateway.observability.rest_hook`) report to.

A hook opens a call's :class:`~gateway.observability.call_record.Call` record (which becomes
:data:`~gateway.observability.call_record.CURRENT`, and whose trace ids log records carry), fills
in what the protocol told it (model, version, status, rows), and closes it; closing hands the
record to each output that is on: TF Serving's request metrics (an output format of the records:
:meth:`TfServingMetrics.record_call`), tensorgate's call duration, and the server span.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from contextvars import Token

from opentelemetry.trace import SpanKind

from channel.logs import TRACE_IDS
from gateway.observability.call_record import CURRENT, Call
from gateway.observability.cells import DEFER_LIMIT
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.span_records import Attributes
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.tracing import Tracing

UNKNOWN_MODEL = "(unknown)"
"""The model label of a call naming a model that is not configured (the name a caller wrote is
never a label value: the metrics page stays small whatever callers send); a call naming none
keeps "", and a failed call's version label is empty."""


class Recorder:
    """Opens and closes calls against whichever of TF metrics, tensorgate metrics, tracing and
    server timing are on (at least one). ``timing``: the hooks put each call's
    :mod:`~gateway.observability.server_timing` value on its answer."""

    def __init__(
        self,
        tfs: TfServingMetrics | None,
        metrics: GatewayMetrics | None,
        tracing: Tracing | None,
        *,
        timing: bool = False,
    ) -> None:
        self.tfs = tfs
        self.metrics = metrics
        self.tracing = tracing
        self.timing = timing
        self.known_models: frozenset[str] = frozenset()
        """The models configured now (:meth:`models_changed`): the only model names a call's
        series may carry; any other counts under :data:`UNKNOWN_MODEL`."""
        self.needs_parent = (
            metrics is None and not timing and tracing is not None and not tracing.roots
        )
        """True when only a sampled parent can make a call worth opening (no metrics, and the
        sampler never samples a root): the hooks then pass calls without a traceparent through
        untouched."""

    def models_changed(self, names: Iterable[str]) -> None:
        """The models configured now are ``names``."""
        self.known_models = frozenset(names)

    def begin(
        self,
        protocol: str,
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
        call = Call(protocol, api, entrypoint, time.perf_counter())
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
            key = (entrypoint, protocol)
            self.metrics.in_flight[key] = self.metrics.in_flight.get(key, 0) + 1
        return call, CURRENT.set(call)

    def end(
        self,
        call: Call,
        token: Token[Call | None],
        *,
        error: str | None = None,
        attributes: Attributes | None = None,
    ) -> None:
        """Close ``call``, its record filled in (model, status, ...), and record it.

        ``error``: the span's error description (None: not an error on the server's side).
        ``attributes``: added to the server span.
        """
        CURRENT.reset(token)
        call.elapsed_s = elapsed_s = time.perf_counter() - call.start
        if call.ids_token is not None:
            TRACE_IDS.reset(call.ids_token)
        model = call.model
        version = "" if call.version is None or call.status != "OK" else str(call.version)
        if model and model not in self.known_models:  # a caller's word: never a series
            model, version = UNKNOWN_MODEL, ""
        if self.tfs is not None:
            self.tfs.record_call(call, model)
        metrics = self.metrics
        if metrics is not None:
            metrics.in_flight[(call.entrypoint, call.protocol)] -= 1
            labels = (model, call.api, call.entrypoint, call.protocol)
            metrics.request_duration.pending.append((labels, elapsed_s))
            pending = metrics.requests.pending
            pending.append((model, version, *labels[1:], call.status))
            if len(pending) > DEFER_LIMIT:
                metrics.request_duration.fold()
                metrics.requests.fold()
        span = call.span
        if span is not None and self.tracing is not None:
            span.attributes = {
                **span.attributes,
                "tensorgate.model": call.model,
                **(attributes or {}),
            }
            self.tracing.end(span, time.time_ns(), error)
