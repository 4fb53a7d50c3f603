"""Observability: TF Serving's Prometheus metrics and tensorgate's own, OpenTelemetry traces.

:class:`~gateway.observability.hooks.Observability` is what the gateway wires in (observed gRPC
method handlers, an observer of REST API calls, the metrics page, an observer per batch queue);
the hooks report neutral call records (:mod:`~gateway.observability.call_record`), and the rest of
the package is what those records feed and how it is written out — TF Serving's metric names are
one output format of them. Nothing here imports a protocol package. The log format is
:mod:`channel.logs` (shared with the workers, which cannot import the gateway).
"""
