"""The one-process gateway (``--frontends 1``): its lifecycle, as explicit ordered steps.

This process is both the supervisor (workers, model lifecycle, polling) and the only front end
(:class:`~gateway.protocol_servers.Servers`); with several front ends the same steps are split
between :mod:`gateway.supervisor` and :mod:`gateway.frontend`.

start: workers → models loaded → gRPC server bound (TCP and optional Unix socket, TLS with
--ssl_config_file; every call behind the :class:`~gateway.transport.gate.Gate`; TF Serving's
services and the Open Inference Protocol's on one port) → REST (``/v1`` and ``/v2``) → health
SERVING → readiness reported. stop (SIGTERM/SIGINT only set events, :mod:`gateway.drain`): health
NOT_SERVING and open batches sent → new calls refused with UNAVAILABLE while running ones finish
(``--shutdown_grace_seconds``; a second signal skips the wait) → servers stop → polling stops →
workers stop (SIGKILL after a timeout) → every channel and shared-memory region released → the
request log writes what is queued (for at most ``--shutdown_grace_seconds`` again; a second
signal skips it) and says what it dropped.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from gateway.config.model_config import ModelSpecConfig
from gateway.config.settings import Settings
from gateway.drain import Signals
from gateway.lifecycle import report_ready, serve
from gateway.models.config_poll import start_polls
from gateway.observability.hooks import Observability
from gateway.protocol_servers import Servers
from gateway.roles import Options, build
from gateway.serving.registry import available_servables
from gateway.tasks import Tasks
from gateway.tfserving.warmup import WarmupPlanner

log = logging.getLogger(__name__)


class Gateway:
    """One gateway process (``--frontends 1``): worker pool, model manager, core and servers."""

    def __init__(
        self,
        settings: Settings,
        specs: Sequence[ModelSpecConfig],
        observability: Observability | None = None,
    ) -> None:
        """``observability``: metrics and tracing (default: as the settings and ``OTEL_*`` ask)."""
        self.settings = settings
        self.specs = list(specs)
        options = Options.from_settings(settings, self.specs)
        self.observability = observability or Observability.from_settings(settings)
        stack = build(
            options,
            self.specs,
            on_change=self._models_changed,
            observer=self.observability.queue_observer,
            on_placed=self.observability.placement_reporter(),
            warmup=WarmupPlanner.from_settings(settings, options.batching),
        )
        self.pool = stack.pool
        self.models = stack.models
        self.queues = stack.queues
        self.core = stack.core
        self.inline = stack.inline
        self.servers = Servers(
            settings,
            self.core,
            self.queues,
            self.observability,
            pages=lambda: self.observability.routes(
                self.pool, self.models, self.models.cache_figures
            ),
        )
        self.signals = Signals()
        self._tasks = Tasks(log)
        self._ready_fd = settings.ready_fd
        self.started = False
        """True once :meth:`start` has completed (the gateway serves)."""

    @property
    def grpc_port(self) -> int:
        return self.servers.grpc_port

    @property
    def rest_port(self) -> int:
        return self.servers.rest_port

    async def serve(self) -> None:
        """Run until SIGTERM/SIGINT (or :meth:`request_stop`), then drain and shut down in order
        (:func:`gateway.lifecycle.serve`)."""
        await serve(self)

    def request_stop(self) -> None:
        """As a signal does: the first call drains, the second skips the wait."""
        self.signals.received()

    async def start(self) -> None:
        settings = self.settings
        await self.pool.start()
        await self.models.apply(self.specs)  # TF Serving's checks (labels) apply at start too
        await self.inline.loaded()  # light versions measured: the first calls go where they stay
        await self.servers.update_health(self.models)
        log.info("%s", self.observability.describe())
        await self.servers.start(settings.port, settings.rest_api_port)
        start_polls(settings, self.models, self._tasks)
        self.started = True
        self._report_ready()

    async def stop(self) -> None:
        """Stop accepting, drain, stop workers, release everything. Safe to call twice."""
        await self.servers.stop(self.signals)
        await self._tasks.close()
        self.inline.close()
        await self.models.close()
        await self.pool.close()
        await self.observability.close(self.settings.shutdown_grace_seconds, self.signals.hurry)
        log.info("tensorgate stopped")

    def _models_changed(self) -> None:
        self.inline.sync(available_servables(self.models))
        self.observability.record_warmups(self.models)
        self.observability.models_changed(self.models)
        self._tasks.spawn(self.servers.update_health(self.models), "health update")

    def _report_ready(self) -> None:
        """Write one JSON line to ``--ready_fd`` (if given) and close it: for supervisors/tests."""
        fd, self._ready_fd = self._ready_fd, -1
        if fd >= 0:
            info = {"pid": os.getpid(), "grpc_port": self.grpc_port, "rest_port": self.rest_port}
            report_ready(fd, info)

    def report_not_ready(self) -> None:
        """The start failed: close ``--ready_fd`` without a line, so whoever waits on it sees
        end-of-file at once (not only once the process has stopped its workers and exited)."""
        fd, self._ready_fd = self._ready_fd, -1
        if fd >= 0:
            os.close(fd)
