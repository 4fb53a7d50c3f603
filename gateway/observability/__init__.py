"""Observability: TF Serving's Prometheus metrics and tensorgate's own, OpenTelemetry traces.

:class:`~gateway.observability.hooks.Observability` is what the gateway wires in (observed gRPC
method handlers, a REST middleware, the metrics page, an observer per batch queue); the rest of the
package is what those hooks record into and how it is written out. The log format is
:mod:`channel.logs` (shared with the workers, which cannot import the gateway).
"""
