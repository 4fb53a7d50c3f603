"""The state of one configured model, and the jobs that change it: a version's load (its
attempts and retries, :mod:`gateway.models.loader`), the swap that follows it, and unloads.

Each version loads in a background job of its own (:class:`VersionJobs`), so that nothing —
another version, another model, a poll, a reload — ever waits for a load it did not start. A
job is told its model's config and ``superseded`` event when it starts; its state changes are
the model's :class:`~gateway.serving.registry.VersionStatus` (LOADING, with the last error while
a retry waits; AVAILABLE; END with the error that ended it). Once a version is AVAILABLE the
versions out of the policy are unloaded (the swap: a model is never left without a serving
version). Jobs are supervised (:mod:`gateway.tasks`): whatever one raises is
logged, never lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import ServingError
from gateway.models.base_path import BasePathWatch
from gateway.models.loader import VersionLoader, Workers
from gateway.models.remote_path import RemoteBasePath
from gateway.serving.registry import Servable, State, VersionStatus
from gateway.tasks import Tasks

log = logging.getLogger(__name__)


@dataclass
class ModelState:
    """One configured model: its config, what its base path showed, its versions."""

    spec: ModelSpecConfig
    watch: BasePathWatch | RemoteBasePath
    versions: dict[int, VersionStatus] = field(default_factory=dict)
    servables: dict[int, Servable] = field(default_factory=dict)
    active: bool = True
    """False once a new config left the model out (its states stay for GetModelStatus)."""
    superseded: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a new config drops or changes the model: its load retries stop."""
    jobs: dict[int, asyncio.Task[None]] = field(default_factory=dict)
    """The load job of each version being loaded."""
    aspired: tuple[int, ...] | None = None
    """The versions the policy chose at the last scan that could list the base path."""


class VersionJobs:
    """Loads versions with ``loader`` and unloads them from ``workers``; ``changed`` is called
    on every state change, ``before_unload`` awaited before a servable is unloaded (its queues
    drain)."""

    def __init__(
        self,
        loader: VersionLoader,
        workers: Workers,
        changed: Callable[[], None],
        before_unload: Callable[[Servable], Awaitable[None]] | None,
    ) -> None:
        self._loader = loader
        self._workers = workers
        self._changed = changed
        self._before_unload = before_unload
        self._tasks = Tasks(log)

    def start(self, model: ModelState, version: int, directory: str) -> asyncio.Task[None]:
        """Start loading ``version`` of ``model`` from ``directory`` (state LOADING)."""
        model.versions[version] = VersionStatus(version, State.LOADING)
        self._changed()
        what = f"load of {model.spec.name} version {version}"
        load = self._load(model, model.spec, model.superseded, version, directory)
        job = self._tasks.spawn(load, what)
        model.jobs[version] = job
        job.add_done_callback(lambda _: model.jobs.pop(version, None))
        return job

    async def close(self) -> None:
        """Stop every load under way (shutdown)."""
        await self._tasks.close()

    async def _load(
        self,
        model: ModelState,
        spec: ModelSpecConfig,
        superseded: asyncio.Event,
        version: int,
        directory: str,
    ) -> None:
        """One version's job (for the config ``spec`` until ``superseded``): its attempts and
        retries, then the swap."""
        name, status = spec.name, model.versions[version]

        def failed(error: ServingError) -> None:
            status.error = error  # GetModelStatus shows it while the retry waits
            self._changed()

        try:
            servable, reports = await self._loader.load(
                spec, version, directory, superseded, failed
            )
        except ServingError as exc:
            log.error("failed to load %s version %d: %s", name, version, exc.message)
            status.state, status.error = State.END, exc
            self._changed()
            return
        model.servables[version] = servable
        status.state, status.error, status.warmup = State.AVAILABLE, None, reports
        if any(r.runs for r in reports):
            runs = ", ".join(f"{r.runs} runs on worker {r.worker}" for r in reports)
            took = 1000 * max(r.seconds for r in reports)
            log.info("warmed up %s version %d: %s in %.1f ms", name, version, runs, took)
        log.info("serving %s version %d (%s)", name, version, servable.platform)
        self._changed()
        await self.unload_stale(model)

    async def unload_stale(self, model: ModelState) -> None:
        """Unload the versions out of the policy, once an aspired version serves (or none is
        aspired: the base path holds no version)."""
        aspired = model.aspired
        if aspired is None or not model.active:
            return
        if any(v in model.servables for v in aspired) or not aspired:
            for version in sorted(model.servables):
                if version not in aspired:
                    await self.unload(model, version)

    async def unload(self, model: ModelState, version: int) -> None:
        """Stop routing to ``version``, drain it, unload it (nothing when it is unloading)."""
        servable = model.servables.pop(version, None)
        if servable is None:
            return
        status = model.versions[version]
        status.state = State.UNLOADING
        self._changed()
        if self._before_unload is not None:
            await self._before_unload(servable)
        await self._workers.unload(servable.key)
        status.state = State.END
        log.info("unloaded %s version %d", model.spec.name, version)
        self._changed()


async def settle(jobs: list[asyncio.Task[None]]) -> None:
    """Return once every job has ended (a caller cancelled meanwhile leaves them running)."""
    if jobs:
        await asyncio.wait(jobs)
