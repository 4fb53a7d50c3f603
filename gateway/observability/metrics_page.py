"""The Prometheus page on the REST port (``--monitoring_config_file``).

A text-format ``MonitoringConfig`` with ``prometheus_config { enable: true }`` serves the page at
``prometheus_config.path`` (default ``/monitoring/prometheus/metrics``, TF Serving's
``PrometheusExporter::kPrometheusPath``), for any HTTP method as upstream. The page is TF
Serving's metrics exactly as TF Serving writes them (:mod:`~gateway.observability.tfs_metrics`),
then tensorgate's own (:mod:`~gateway.observability.metrics`, :mod:`~gateway.observability.workers`)
in Prometheus' text format 0.0.4.
"""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from gateway.config.model_config import ConfigError, load_monitoring_config
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.workers import WorkerFigures
from gateway.transport.http.http_messages import HttpRequest, HttpResponse

DEFAULT_PATH = "/monitoring/prometheus/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def metrics_path(monitoring_config_file: str) -> str | None:
    """Where the page is served, or None when the file is not given or does not enable it.
    ConfigError for an unreadable file or a path that is not absolute."""
    if not monitoring_config_file:
        return None
    config = load_monitoring_config(monitoring_config_file).prometheus_config
    if not config.enable:
        return None
    path = config.path or DEFAULT_PATH
    if not path.startswith("/"):
        raise ConfigError(
            f"Invalid tensorflow.serving.MonitoringConfig in {monitoring_config_file}: "
            f"prometheus_config.path must start with '/', got {path!r}"
        )
    return path


class MetricsPage:
    """The page's handler: asks the workers for their figures, then writes every metric."""

    def __init__(
        self, tfs: TfServingMetrics, registry: CollectorRegistry, workers: WorkerFigures
    ) -> None:
        self.tfs = tfs
        self.registry = registry
        self.workers = workers

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        await self.workers.refresh()
        body = self.tfs.render().encode() + generate_latest(self.registry)
        return HttpResponse(200, body, CONTENT_TYPE)
