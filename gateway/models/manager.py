"""The model manager: which models and versions are served, and their states.

The config is a list of :class:`ModelSpecConfig`; :meth:`ModelManager.apply` replaces it as a
whole (start, ``HandleReloadConfigRequest``, a re-read config file), checked first by TF
Serving's rules (:mod:`gateway.models.reload_rules`). The version policy picks the aspired
versions on disk (``latest`` N — default 1 —, ``all``, ``specific``; layout in
:mod:`gateway.models.versions`); a base path that cannot be listed changes nothing
(:mod:`gateway.models.base_path`). Aspired versions are loaded, warmed up and routed to before
versions leaving the policy are unloaded, so a swap never leaves the model without a serving
version; a model left out of a new config is unloaded once its queued and in-flight requests are
done.

Each version loads in a job of its own (:mod:`gateway.models.jobs`; attempts and retries in
:mod:`gateway.models.loader`): at most ``--num_load_threads`` attempts run at once
(:mod:`gateway.models.load_slots`), and a failed one is retried ``retries`` times,
``retry_interval_s`` apart, showing its last error while it waits, unless a new config drops or
changes the model meanwhile; then the version ends with its error, the others serve on. Nothing
waits for another version's load: a scan of the disk and a new config start jobs and return once
the jobs *they* started are done; the lock they share is never held while a job loads.
Version states follow TF Serving's ``ModelVersionStatus.State`` (START, LOADING, AVAILABLE,
UNLOADING, END).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import NotFound, ServingError
from gateway.models import reload_rules
from gateway.models.base_path import BasePathWatch
from gateway.models.jobs import ModelState, VersionJobs, settle
from gateway.models.load_slots import LoadSlots
from gateway.models.loader import LoadOptions, VersionLoader, Warmup, Workers
from gateway.models.remote_path import ModelStorage, RemoteBasePath
from gateway.serving.registry import Servable, State, VersionStatus, pick_servable
from gateway.storage.cache import CacheFigures
from gateway.storage.urls import is_url

log = logging.getLogger(__name__)


class ModelManager:
    """Keeps the served versions of every configured model in line with config, disk and policy.

    It is the :class:`~gateway.serving.registry.Models` the request core reads and asks for a
    new config.
    """

    def __init__(
        self,
        workers: Workers,
        specs: Sequence[ModelSpecConfig],
        *,
        intra_op: int,
        inter_op: int,
        saved_model_tags: Sequence[str] = ("serve",),
        options: LoadOptions | None = None,
        on_change: Callable[[], None] | None = None,
        before_load: Callable[[str, int, str], None] | None = None,
        before_unload: Callable[[Servable], Awaitable[None]] | None = None,
        warmup: Warmup | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``workers``: where versions load (a :class:`~gateway.worker_pool.pool.WorkerPool`).
        ``specs``: the models to serve from the first :meth:`reconcile` (no config checks:
        :meth:`apply` them to check). ``on_change``: called whenever a version's state or the
        config in force changes.
        ``before_load``: called with (model, version, version directory) before a load; a
        ServingError it raises fails that attempt (e.g. a bad per-model batching_params.pbtxt).
        ``before_unload``: awaited after a servable stops taking new requests and before it is
        unloaded (its queues drain). ``warmup``: the runs replayed before a version serves.
        ``clock``: seconds, for the log lines of a missing base path."""
        self._workers = workers
        self._options = options or LoadOptions()
        self._slots = LoadSlots(self._options.initial_threads or self._options.threads)
        self._first_config = True
        self._clock = clock
        self._storage = ModelStorage(
            self._options.cache_root, self._options.cache_max_bytes, self._in_use, clock
        )
        self._loader = VersionLoader(
            workers,
            intra_op,
            inter_op,
            tuple(saved_model_tags),
            self._options,
            before_load,
            warmup,
            self._slots,
            self._storage.fetch,
        )
        self._models: dict[str, ModelState] = {s.name: self._new_model(s) for s in specs}
        self._lock = asyncio.Lock()
        """Held while the config or the disk is read and jobs started, never while one loads."""
        self._on_change = on_change
        self._versions = VersionJobs(self._loader, workers, self._changed, before_unload)

    def _new_model(self, spec: ModelSpecConfig) -> ModelState:
        return ModelState(spec, self._watch(spec))

    def _watch(self, spec: ModelSpecConfig) -> BasePathWatch | RemoteBasePath:
        if is_url(spec.base_path):
            return self._storage.watch(spec.name)
        return BasePathWatch(spec.name, self._clock)

    def _in_use(self) -> set[str]:
        """The local folders of every version served or being loaded (the cache keeps them)."""
        folders = set()
        for model in self._models.values():
            folders |= {s.directory for s in model.servables.values()}
            if is_url(model.spec.base_path):
                base = model.spec.base_path.rstrip("/")
                folders |= {self._storage.folder(f"{base}/{v}") for v in model.jobs}
        return folders

    def cache_figures(self) -> CacheFigures | None:
        """The figures of the cache of versions from object stores (None: no model has an
        object URL)."""
        return self._storage.figures()

    # -- queries --------------------------------------------------------------------------------
    def model_names(self) -> list[str]:
        """Every model configured since start, those a later config removed included."""
        return list(self._models)

    def specs(self) -> list[ModelSpecConfig]:
        """The config in force: the served models' specs."""
        return [m.spec for m in self._models.values() if m.active]

    def is_available(self, name: str) -> bool:
        """True when some version of ``name`` is loaded on at least one live worker."""
        model = self._models.get(name)
        if model is None or not model.active:
            return False
        return any(self._workers.hosts(s.key) for s in model.servables.values())

    def all_available(self) -> bool:
        return all(self.is_available(m.spec.name) for m in self._models.values() if m.active)

    def resolve(self, name: str, version: int | None = None, label: str | None = None) -> Servable:
        """The servable for a ModelSpec: latest available, a specific version, or a label.

        Raises NotFound with TF Serving's "Servable not found for request: ..." texts.
        """
        model = self._models.get(name)
        if model is None or not model.active:
            return pick_servable(name, None, {}, version, label)
        return pick_servable(name, model.servables, model.spec.labels, version, label)

    def statuses(self, name: str, version: int | None = None) -> list[VersionStatus]:
        """Version states for GetModelStatus (TF Serving's NOT_FOUND texts when unknown)."""
        model = self._models.get(name)
        if model is None or not model.versions:
            watch = None if model is None else model.watch
            error = watch.error if isinstance(watch, RemoteBasePath) else None
            reason = "" if error is None else f": {error}"
            raise NotFound(f"Could not find any versions of model {name}{reason}")
        if version is None:
            return [model.versions[v] for v in sorted(model.versions)]
        status = model.versions.get(version)
        if status is None:
            raise NotFound(f"Could not find version {version} of model {name}")
        return [status]

    # -- config ---------------------------------------------------------------------------------
    async def apply(self, specs: Sequence[ModelSpecConfig]) -> None:
        """Serve exactly ``specs`` (TF Serving's ``ReloadConfig``): returns once the versions
        of new and changed models are loaded or failed for good, and dropped models unloaded.
        Loads of other models, and their retries, go on meanwhile and are not waited for.

        Refused before any change (the running config stays) with InvalidArgument for a changed
        platform and FailedPrecondition for a label naming an unavailable version; an UNKNOWN
        ServingError after the change names new models that did not become available (a new
        model whose base path does not exist yet is not one: it loads once the path appears).
        """
        self._check(specs)
        wanted = {s.name: s for s in specs}
        for model in self._models.values():
            if model.active and wanted.get(model.spec.name) != model.spec:
                model.superseded.set()  # its load retries stop; its jobs end sooner
        started: list[asyncio.Task[None]] = []
        async with self._lock:
            active = [m for m in self._models.values() if m.active]
            changed = [m for m in active if wanted.get(m.spec.name) != m.spec]
            try:
                self._check(specs)  # again: versions may have come and gone while waiting
            except ServingError:
                for model in changed:  # not changed after all: later loads may go on
                    model.superseded = asyncio.Event()
                raise
            new = [n for n in wanted if not self._is_active(n)]
            await settle([job for model in changed for job in model.jobs.values()])
            for model in changed:
                if model.spec.name not in wanted:
                    await self._retire(model)
            for spec in specs:
                touched = self._configure(spec)
                if touched is None and self._models[spec.name].aspired is None:
                    touched = self._models[spec.name]  # never scanned yet (the first config)
                if touched is not None:
                    started += await self._scan_model(touched)
        await self._loaded(started)
        failures: dict[tuple[str, int], ServingError | None] = {}
        for name in new:
            model = self._models[name]
            if self.is_available(name) or model.watch.missing:
                continue
            ended = [s for s in model.versions.values() if s.error is not None]
            for status in ended or [VersionStatus(-1, State.END)]:
                failures[(name, status.version)] = status.error
        if failures:
            raise reload_rules.not_available_error(failures)

    async def rescan(self, name: str) -> None:
        """Scan the served model ``name`` now, whatever the polling flags: load new versions,
        retry versions whose load failed for good (their retries spent), unload those out of
        the policy once an aspired one serves; return once the loads started are done (as
        Triton's repository load of a loaded model). Raises NotFound when ``name`` is not
        served, and the UNKNOWN error of :meth:`apply` naming the versions that failed."""
        async with self._lock:
            model = self._models.get(name)
            if model is None or not model.active:
                raise NotFound(f"Could not find any versions of model {name}")
            _forget_failed(model)  # failed for good: a fresh try
            started = await self._scan_model(model)
            tried = [v for v, job in model.jobs.items() if job in started]
        await self._loaded(started)
        failures: dict[tuple[str, int], ServingError | None] = {
            (name, v): model.versions[v].error
            for v in tried
            if model.versions[v].state == State.END and model.versions[v].error is not None
        }
        if failures:
            raise reload_rules.not_available_error(failures)

    def _is_active(self, name: str) -> bool:
        return name in self._models and self._models[name].active

    def _check(self, specs: Sequence[ModelSpecConfig]) -> None:
        current = {m.spec.name: m.spec for m in self._models.values() if m.active}
        reload_rules.check_platforms(current, specs)
        reload_rules.check_labels(
            current,
            specs,
            lambda name, version: self._is_active(name) and version in self._models[name].servables,
            allow_unavailable=self._options.allow_unavailable_labels,
        )

    def _configure(self, spec: ModelSpecConfig) -> ModelState | None:
        """Take ``spec`` into the config: the model when it is new or changed (a changed model
        gets a fresh try at versions that failed before; ``on_change`` is called, as a label
        move or a new model changes what the registry answers though no version changed state),
        None when it is as it was."""
        model = self._models.get(spec.name)
        if model is None:
            model = self._models[spec.name] = self._new_model(spec)
            self._changed()
            return model
        if model.active and model.spec == spec:
            return None
        if model.spec.base_path != spec.base_path:
            model.watch = self._watch(spec)
        model.spec, model.active, model.superseded = spec, True, asyncio.Event()
        _forget_failed(model)
        self._changed()
        return model

    async def _retire(self, model: ModelState) -> None:
        """Unload every version of a model the config no longer lists."""
        for version in sorted(model.servables):
            await self._versions.unload(model, version)
        model.active = False
        log.info("model %s removed from the config", model.spec.name)
        self._changed()

    # -- reconciliation -------------------------------------------------------------------------
    async def reconcile(self) -> None:
        """Scan disk once (:meth:`scan`) and return once the loads it started are done."""
        await self._loaded(await self.scan())

    async def scan(self) -> list[asyncio.Task[None]]:
        """Scan each model's base path once: start the load of each aspired version neither
        served nor loading, unload versions out of the policy once an aspired one serves. The
        load jobs started, not awaited (``--file_system_poll_wait_seconds``' poll)."""
        remote = [m for m in self._models.values() if m.active and is_url(m.spec.base_path)]
        await asyncio.gather(
            *(
                m.watch.prefetch(m.spec.base_path)
                for m in remote
                if isinstance(m.watch, RemoteBasePath)
            )
        )  # listed before the lock: a store slow to answer holds up no reload
        async with self._lock:
            active = [m for m in self._models.values() if m.active]
            scans = await asyncio.gather(*(self._scan_model(m) for m in active))
        return [job for jobs in scans for job in jobs]

    async def close(self) -> None:
        """Stop every load and download under way (shutdown)."""
        self._storage.close()
        await self._versions.close()

    async def unload_all(self) -> None:
        """Stop every load under way and unload every servable (shutdown)."""
        await self.close()
        async with self._lock:
            for model in self._models.values():
                for version in sorted(model.servables):
                    await self._versions.unload(model, version)

    async def _loaded(self, jobs: list[asyncio.Task[None]]) -> None:
        """Wait for ``jobs``; the first config's loads done, later ones take
        ``--num_load_threads``."""
        try:
            await settle(jobs)
        finally:
            if self._first_config:
                self._first_config = False
                self._slots.limit = self._options.threads

    async def _scan_model(self, model: ModelState) -> list[asyncio.Task[None]]:
        on_disk = await model.watch.poll(model.spec.base_path, len(model.servables))
        if on_disk is None:
            return []  # TF Serving publishes nothing for a base path it cannot list
        aspired = model.spec.select_versions(on_disk)
        model.aspired = aspired
        started = []
        for version in aspired:
            if version in model.servables or version in model.jobs:
                continue
            status = model.versions.get(version)
            if status is not None and status.state == State.END and status.error is not None:
                continue  # failed before (retries spent); a changed config tries again
            started.append(self._versions.start(model, version, on_disk[version]))
        await self._versions.unload_stale(model)
        return started

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()


def _forget_failed(model: ModelState) -> None:
    """Drop the versions of ``model`` whose load failed for good, so a scan tries them again."""
    for version, status in list(model.versions.items()):
        if status.state == State.END and status.error is not None:
            del model.versions[version]
