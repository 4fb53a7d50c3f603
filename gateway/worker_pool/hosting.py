"""Which servables the workers host: placed, loaded, warmed up, then routed; unloaded; restored.

A servable is placed on every worker or on a subset (:mod:`gateway.worker_pool.placement`), loaded
there over each worker's control link, warmed up there (:mod:`gateway.worker_pool.warmup_replay`),
and only then routed to (:meth:`RunRouter.route <gateway.worker_pool.run_router.RunRouter.route>`):
a worker takes traffic for a servable once it holds it warm, on a first load and after a respawn
alike. A load is all or nothing: a worker that fails (it died: UNAVAILABLE) stops the load and
warmup on the others, and the servable is unloaded everywhere.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from channel.messages import LoadReply
from gateway.errors import ServingError, Unavailable
from gateway.tasks import gather_all
from gateway.worker_channel.warmup_runs import Planner, WarmupReport
from gateway.worker_pool import placement
from gateway.worker_pool.process import WorkerProcess
from gateway.worker_pool.run_router import RunRouter
from gateway.worker_pool.warmup_replay import warm_up

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadSpec:
    """What a worker needs to load one servable (replayed on respawn)."""

    key: str
    path: str
    platform: str
    intra_op: int
    inter_op: int
    tags: tuple[str, ...] = ("serve",)
    """SavedModel MetaGraph tags (``--saved_model_tags``); ONNX ignores them."""
    workers: int = 0
    """How many workers host it (``--model_workers``); 0: every worker."""
    runtime: str = ""
    """``openvino``, or "" for the platform's own runtime (``--model_runtimes``)."""
    precision: str = ""
    """OpenVINO's precision (``fp32``, ``bf16``); "" with the platform's own runtime."""


@dataclass(frozen=True)
class Loaded:
    """A servable's signature (the first worker's ``load`` reply) and its warmup per worker."""

    signature: dict[str, Any]
    warmup: tuple[WarmupReport, ...] = ()


@dataclass(frozen=True)
class _Load:
    spec: LoadSpec
    warmup: Planner | None


class Hosting:
    """The servables placed on a pool's worker slots; runs are routed by ``dispatcher``."""

    def __init__(self, dispatcher: RunRouter) -> None:
        self._dispatcher = dispatcher
        self._loads: dict[str, _Load] = {}
        self._placed: dict[str, tuple[int, ...]] = {}

    def placed(self, key: str) -> tuple[int, ...]:
        """The worker slots a servable is placed on (empty when it is not loaded)."""
        return self._placed.get(key, ())

    async def load(
        self, spec: LoadSpec, warmup: Planner | None, slots: Sequence[WorkerProcess | None]
    ) -> Loaded:
        """Load a servable on its workers among ``slots``, replay its warmup on each, then route.

        ``warmup`` turns the signature into the runs to replay (None: none). The servable is
        remembered with its placement and replayed, warmup included, on workers respawned later.
        On any failure it is unloaded from every worker and the error raised.
        """
        chosen = placement.choose(
            spec.workers,
            placement.hosted_counts(self._placed.values(), len(slots)),
            [w is not None and w.alive for w in slots],
        )
        workers = [w for i in chosen if (w := slots[i]) is not None and w.alive]
        if not workers:
            raise Unavailable("no worker is running")
        self._placed[spec.key] = chosen
        try:
            replies = await gather_all(*(_load_on(w, spec) for w in workers))
            signature = replies[0]["signature"]
            runs = await warmup(signature) if warmup is not None else ()
            reports = await gather_all(
                *(warm_up(w.runs, w.control, spec.key, runs, self._dispatcher) for w in workers)
            )
        except BaseException:
            await self.unload(spec.key, slots)
            raise
        for w in workers:
            self._route(w, spec.key)
        self._loads[spec.key] = _Load(spec, warmup)
        return Loaded(signature, tuple(reports))

    async def unload(self, key: str, slots: Sequence[WorkerProcess | None]) -> None:
        """Unload a servable from every worker (errors from dead workers are ignored)."""
        self._loads.pop(key, None)
        self._placed.pop(key, None)
        for w in slots:
            if w is None or key not in w.held:
                continue
            w.held.discard(key)
            w.routed.discard(key)
            self._dispatcher.unroute(w.index, key)
            with contextlib.suppress(ServingError):
                await w.control.unload(key)

    async def restore(self, worker: WorkerProcess) -> None:
        """Give a respawned worker the servables placed on its slot: load, warm up, route. One
        that fails to load there is logged and not routed there (the worker serves the others);
        the worker's death raises its UNAVAILABLE."""
        for load in list(self._loads.values()):
            if worker.index in self._placed.get(load.spec.key, ()):
                try:
                    await self._reload_on(worker, load)
                except ServingError as exc:
                    worker.endpoint.check_open()  # it died: its start fails instead
                    log.error(
                        "reloading %s on respawned worker %d failed (not served there): %s",
                        load.spec.key,
                        worker.index,
                        exc.message,
                    )

    async def _reload_on(self, worker: WorkerProcess, load: _Load) -> None:
        reply = await _load_on(worker, load.spec)
        key = load.spec.key
        if load.warmup is not None:
            try:
                runs = await load.warmup(reply["signature"])
                await warm_up(worker.runs, worker.control, key, runs, self._dispatcher)
            except ServingError as exc:
                worker.endpoint.check_open()  # it died: its start fails instead
                log.error(
                    "warmup of %s on respawned worker %d failed (serving it cold): %s",
                    key,
                    worker.index,
                    exc.message,
                )
        self._route(worker, key)

    def _route(self, worker: WorkerProcess, key: str) -> None:
        worker.routed.add(key)
        self._dispatcher.route(worker.index, key)


async def _load_on(worker: WorkerProcess, spec: LoadSpec) -> LoadReply:
    worker.held.add(spec.key)
    return await worker.control.load(
        key=spec.key,
        path=spec.path,
        platform=spec.platform,
        intra_op=spec.intra_op,
        inter_op=spec.inter_op,
        tags=spec.tags,
        runtime=spec.runtime,
        precision=spec.precision,
    )
