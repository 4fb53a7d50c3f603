"""The whole server's metrics page, written by the supervisor for whichever front end is scraped.

A scrape on any front end asks the supervisor (``scrape``), which asks every joined front end for
its figures (``figures``: :func:`gateway.ipc.figures.dump`), pings the workers for theirs, and
adds everything up once (:func:`gateway.ipc.figures.merge`; the rule is there): each front end's
calls and batches, the supervisor's own series (TF Serving's warmup metrics: warmups happen here),
the workers' figures, restarts, shared memory and the models' states. The page is then written
by the one-process writers (:meth:`TfServingMetrics.render`, prometheus_client): the same format
as one process's page.

Exactly once: every joined front end counts once. One that does not answer within ``timeout_s``
counts with its previous answer; one that died counts with its last answer for good (a counter
never goes down when a front end is replaced; what it recorded after its last scrape is lost).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.core import Metric

from gateway.errors import ServingError
from gateway.ipc import figures
from gateway.observability.metrics import GatewayCollector, GatewayMetrics, registry_of
from gateway.observability.server_figures import CacheReader, server_families
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.observability.workers import ShmUse, WorkerFigures
from gateway.serving.registry import Registry
from gateway.supervisor.frontends import FrontEndProcess
from gateway.worker_pool.pool import WorkerPool

FIGURES_TIMEOUT_S = 2.0
"""How long a scrape waits for each front end's figures."""


class FleetPage:
    """The page over ``front_ends`` (joined, by slot), ``pool`` and the supervisor's own ``tfs``
    series (None: metrics are off)."""

    def __init__(
        self,
        front_ends: dict[int, FrontEndProcess],
        pool: WorkerPool,
        tfs: TfServingMetrics | None,
        timeout_s: float = FIGURES_TIMEOUT_S,
        *,
        models: Registry | None = None,
        restarts: Callable[[], int] | None = None,
        cache: CacheReader | None = None,
    ) -> None:
        self._front_ends = front_ends
        self._tfs = tfs
        self._timeout_s = timeout_s
        self._latest: dict[int, dict[str, Any]] = {}
        """Front end serial → its latest figures."""
        self._departed: list[dict[str, Any]] = []
        self._shared: ShmUse = {}
        self.workers = WorkerFigures(pool, shared=lambda: self._shared)
        self._models = models
        self._restarts = restarts
        self._cache = cache

    def departed(self, front: FrontEndProcess) -> None:
        """``front`` is gone: its last figures count from now on, for good."""
        last = self._latest.pop(front.serial, None)
        if last is not None:
            # Gauges of a process that is gone: in flight, shared memory, where it ran versions.
            last = {**last, "in_flight": [], "runs_in": [], "shm": []}
            self._departed.append(last)

    async def render(self) -> bytes:
        """The page (see the module doc)."""
        fronts = list(self._front_ends.values())
        answers = await asyncio.gather(*(self._ask(front) for front in fronts))
        for front, answer in zip(fronts, answers, strict=True):
            if answer is not None:
                self._latest[front.serial] = answer
        tfs, metrics = TfServingMetrics(), GatewayMetrics()
        shm: ShmUse = {}
        own = figures.dump(self._tfs, None, {})
        for dumped in [own, *self._departed, *self._latest.values()]:
            figures.merge(tfs, metrics, dumped, shm)
        self._shared = shm
        await self.workers.refresh()
        registry = registry_of(GatewayCollector(metrics, self._live))
        return tfs.render().encode() + generate_latest(registry)

    def _live(self) -> Iterator[Metric]:
        yield from self.workers.families()
        yield from server_families(self._models, self._restarts, self._cache)

    async def _ask(self, front: FrontEndProcess) -> dict[str, Any] | None:
        call = front.link.call("figures")
        with contextlib.suppress(ServingError, TimeoutError):
            answer = await asyncio.wait_for(asyncio.shield(call), self._timeout_s)
            return dict(answer["figures"])
        if not call.done():
            call.add_done_callback(_retrieve)
        return None


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
