"""What the gateway wires in: metrics, tracing and the request log built from the settings and
``OTEL_*``, and the hooks that carry them — observed gRPC method handlers, an observer of REST API
calls, the metrics page route and an observer per batch queue. With neither metrics, tracing nor
a request log (which needs a config file or the management API) on, every hook is absent and
nothing is recorded. The hooks are written against the front door's extension points
(:mod:`gateway.transport`) and import no protocol package: what they learn of a call, its protocol
tells them (:class:`~gateway.transport.surface.GrpcService`,
:class:`~gateway.transport.http.routes.ApiCall`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import Metric

from gateway.batching.observer import BatchObserver
from gateway.config.batching_options import thread_pool_name
from gateway.config.settings import Settings
from gateway.errors import NotFound
from gateway.observability import grpc_hook, rest_hook
from gateway.observability.batches import RUNTIMES, QueueLabels, QueueObserver
from gateway.observability.calls import Recorder
from gateway.observability.metrics import (
    GatewayCollector,
    GatewayMetrics,
    registry_of,
    set_runs_in,
)
from gateway.observability.metrics_page import MetricsPage, metrics_path
from gateway.observability.model_stats import ModelStats
from gateway.observability.request_log import LogLimits, RequestLog
from gateway.observability.server_figures import CacheReader, server_families
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.tracing import Tracing
from gateway.observability.workers import WorkerFigures
from gateway.serving.registry import Models, Registry, Servable, State
from gateway.transport.http.routes import ExtraRoute, Observe
from gateway.worker_pool.pool import WorkerPool

log = logging.getLogger(__name__)


class Observability:
    """Metrics (when ``page_path`` is set), tracing (when ``tracing`` is given) and server timing
    (when ``server_timing``: :mod:`~gateway.observability.server_timing`).

    ``thread_pool``: the batch thread pool's name with ``--enable_batching`` (TF's batching
    metrics are recorded only then), else None. ``log_limits``: the request log's bounds
    (``--request_log_*``); None: no request logging (no config file nor management API: no
    model config can ask for it).
    """

    def __init__(
        self,
        *,
        page_path: str | None,
        tracing: Tracing | None,
        thread_pool: str | None = None,
        server_timing: bool = False,
        log_limits: LogLimits | None = None,
    ) -> None:
        self.page_path = page_path
        self.log_limits = log_limits
        self.request_log: RequestLog | None = None
        """The request log, once an observer made it (when ``log_limits`` is set)."""
        self.tracing = tracing
        self.thread_pool = thread_pool
        self.server_timing = server_timing
        self.tfs = TfServingMetrics() if page_path else None
        self.metrics = GatewayMetrics() if page_path else None
        self.recorder = None
        self._warmups_seen: dict[tuple[str, int], object] = {}
        """(model, version) → the warmup reports already recorded (a reload brings new ones)."""
        if page_path or tracing or server_timing:
            self.recorder = Recorder(self.tfs, self.metrics, tracing, timing=server_timing)

    @classmethod
    def from_settings(
        cls, settings: Settings, env: Mapping[str, str] = os.environ
    ) -> Observability:
        """As ``--monitoring_config_file`` and the ``OTEL_*`` variables ask (ConfigError for a bad
        file or variable). The page lives on the REST port: without one, no metrics."""
        pool = None
        if settings.enable_batching:
            pool = thread_pool_name(settings.batching_parameters_file)
        path = metrics_path(settings.monitoring_config_file)
        if path and not settings.rest_api_port:
            log.warning("--monitoring_config_file ignored: the metrics page needs --rest_api_port")
            path = None
        return cls(
            page_path=path,
            tracing=Tracing.from_environment(env),
            thread_pool=pool,
            server_timing=settings.enable_server_timing,
            log_limits=LogLimits.from_settings(settings)
            if settings.model_config_file or settings.enable_model_management_api
            else None,
        )

    @property
    def model_stats(self) -> ModelStats | None:
        """Each model version's statistics, kept while metrics are on (None when off)."""
        return None if self.metrics is None else self.metrics.model_stats

    def grpc_observer(self, models: Models | None = None) -> grpc_hook.GrpcObserver | None:
        """The observer of gRPC calls (None when nothing is recorded or logged): it records the
        calls of services with a ``model_of`` and offers their loggable calls to the request
        log of ``models``' config in force (with ``log_limits``)."""
        request_log = self._request_log(models)
        if self.recorder is None and request_log is None:
            return None
        return grpc_hook.GrpcObserver(self.recorder, request_log)

    def rest_observer(self, models: Models | None = None) -> Observe | None:
        """The HTTP server's observer of API calls (None when nothing is recorded or logged); it
        runs them through the request log of ``models``' config in force (with
        ``log_limits``)."""
        request_log = self._request_log(models)
        if self.recorder is None and request_log is None:
            return None
        return rest_hook.observer(self.recorder, request_log)

    def _request_log(self, models: Models | None) -> RequestLog | None:
        """The process's one request log (made at the first call with ``models``)."""
        if self.request_log is None and models is not None and self.log_limits is not None:
            self.request_log = RequestLog(
                models.specs(),
                self.log_limits,
                dropped=None if self.metrics is None else self.metrics.log_dropped,
            )
        return self.request_log

    def models_changed(self, models: Models) -> None:
        """The config in force may have changed: the request log follows it, and the calls'
        series name only the models configured now."""
        specs = models.specs()
        if self.request_log is not None:
            self.request_log.configure(specs)
        if self.recorder is not None:
            self.recorder.models_changed(spec.name for spec in specs)

    def routes(
        self, pool: WorkerPool, models: Registry | None = None, cache: CacheReader | None = None
    ) -> dict[str, ExtraRoute]:
        """The metrics page, served on the REST port, when metrics are on (with ``models``'
        states and the model ``cache``'s figures: :mod:`~gateway.observability.server_figures`)."""
        if self.page_path is None or self.tfs is None or self.metrics is None:
            return {}
        workers = WorkerFigures(pool)

        def live() -> Iterator[Metric]:
            yield from workers.families()
            yield from server_families(models, cache=cache)

        registry = registry_of(GatewayCollector(self.metrics, live))
        return {self.page_path: MetricsPage(self.tfs, registry, workers)}

    def placement_reporter(self) -> Callable[[dict[str, str]], None] | None:
        """What inline runs call with their placement (servable key → where it runs), to show it
        in the metrics (None when metrics are off)."""
        return None if self.metrics is None else functools.partial(set_runs_in, self.metrics)

    def queue_observer(self, servable: Servable, signature_name: str) -> BatchObserver | None:
        """The observer of a new batch queue (BatchQueues' ``observer`` factory)."""
        if self.recorder is None:
            return None
        signature = servable.signatures.get(signature_name)
        labels = QueueLabels(
            model=servable.model,
            version=str(servable.version),
            runtime=RUNTIMES.get(servable.runtime or servable.platform, servable.platform),
            inputs=len(signature.inputs) if signature is not None else 1,
            thread_pool=self.thread_pool,
        )
        return QueueObserver(labels, self.tfs, self.metrics, self.tracing, timed=self.server_timing)

    def record_warmups(self, models: Registry) -> None:
        """Export each version's warmup once it serves (TF Serving's ``model_warmup_latency`` and
        ``model_warmup_records_read``, labelled by the version's directory and ``OK``): the
        slowest worker's replay time, and the runs that worker counted. Call on every model
        change; a version loaded again is recorded again."""
        if self.tfs is None:
            return
        for name in models.model_names():
            try:
                statuses = models.statuses(name)
            except NotFound:
                continue
            for status in statuses:
                reports = status.warmup
                if status.state != State.AVAILABLE or not any(r.runs for r in reports):
                    continue
                if self._warmups_seen.get((name, status.version)) is reports:
                    continue
                self._warmups_seen[(name, status.version)] = reports
                directory = models.resolve(name, status.version).directory
                micros = 1e6 * max(r.seconds for r in reports)
                self.tfs.record_warmup(directory, "OK", micros, max(r.runs for r in reports))

    def describe(self) -> str:
        """One line for the start-up log."""
        metrics = f"metrics at {self.page_path}" if self.page_path else "no metrics page"
        tracing = "tracing on" if self.tracing else "tracing off"
        timing = ", server timing on" if self.server_timing else ""
        return f"Observability: {metrics}, {tracing}{timing}"

    async def close(self, flush_s: float | None = None, hurry: asyncio.Event | None = None) -> None:
        """Write the request log's queued records, for at most ``flush_s`` seconds and only until
        ``hurry`` is set (:meth:`RequestLog.close`), and export the spans still queued (blocking
        work, off the loop)."""
        if self.request_log is not None:
            await self.request_log.close(flush_s, hurry)
        if self.tracing is not None:
            await asyncio.to_thread(self.tracing.shutdown)
