"""The model manager: which models and versions are served, and their states.

The config is a list of :class:`ModelSpecConfig`; :meth:`ModelManager.apply` replaces it as a
whole (start, ``HandleReloadConfigRequest``, a re-read config file), checked first by TF
Serving's rules (:mod:`gateway.models.reload_rules`). The version policy picks the aspired
versions on disk (``latest`` N — default 1 —, ``all``, ``specific``; layout in
:mod:`gateway.models.versions`). Aspired versions are loaded, warmed up and routed to before
versions leaving the policy are unloaded, so a swap never leaves the model without a serving
version; a model left out of a new config is unloaded once its queued and in-flight requests are
done. A failed load is retried ``retries`` times, ``retry_interval_s`` apart, unless a new config
drops or changes the model meanwhile (:mod:`gateway.models.loader`); then the version ends with its
error, the others serve on.
Version states follow TF Serving's ``ModelVersionStatus.State`` (START, LOADING, AVAILABLE,
UNLOADING, END).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import NotFound, ServingError
from gateway.models import reload_rules, versions
from gateway.models.loader import LoadOptions, VersionLoader, Warmup, Workers
from gateway.serving.registry import Servable, State, VersionStatus, pick_servable

log = logging.getLogger(__name__)


@dataclass
class _Model:
    spec: ModelSpecConfig
    versions: dict[int, VersionStatus] = field(default_factory=dict)
    servables: dict[int, Servable] = field(default_factory=dict)
    active: bool = True
    """False once a new config left the model out (its states stay for GetModelStatus)."""
    superseded: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a new config drops or changes the model: its load retries stop."""


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
    ) -> None:
        """``workers``: where versions load (a :class:`~gateway.parallel.pool.WorkerPool`).
        ``specs``: the models to serve from the first :meth:`reconcile` (no config checks:
        :meth:`apply` them to check). ``on_change``: called whenever a version's state changes.
        ``before_load``: called with (model, version, version directory) before a load; a
        ServingError it raises fails that attempt (e.g. a bad per-model batching_params.pbtxt).
        ``before_unload``: awaited after a servable stops taking new requests and before it is
        unloaded (its queues drain). ``warmup``: the runs replayed before a version serves."""
        self._workers = workers
        self._options = options or LoadOptions()
        self._loader = VersionLoader(
            workers,
            intra_op,
            inter_op,
            tuple(saved_model_tags),
            self._options,
            before_load,
            warmup,
        )
        self._models: dict[str, _Model] = {s.name: _Model(s) for s in specs}
        self._lock = asyncio.Lock()
        self._on_change = on_change
        self._before_unload = before_unload

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
            raise NotFound(f"Could not find any versions of model {name}")
        if version is None:
            return [model.versions[v] for v in sorted(model.versions)]
        status = model.versions.get(version)
        if status is None:
            raise NotFound(f"Could not find version {version} of model {name}")
        return [status]

    # -- config ---------------------------------------------------------------------------------
    async def apply(self, specs: Sequence[ModelSpecConfig]) -> None:
        """Serve exactly ``specs`` (TF Serving's ``ReloadConfig``): returns once new and changed
        models are loaded or failed and dropped ones unloaded.

        Refused before any change (the running config stays) with InvalidArgument for a changed
        platform and FailedPrecondition for a label naming an unavailable version; an UNKNOWN
        ServingError after the change names new models that did not become available.
        """
        self._check(specs)
        wanted = {s.name: s for s in specs}
        for model in self._models.values():
            if model.active and wanted.get(model.spec.name) != model.spec:
                model.superseded.set()  # its load retries stop; the lock frees sooner
        async with self._lock:
            self._check(specs)  # again: versions may have come and gone while waiting
            new = [n for n in wanted if not self._is_active(n)]
            for model in self._models.values():
                if model.active and model.spec.name not in wanted:
                    await self._retire(model)
            for spec in specs:
                self._configure(spec)
            await asyncio.gather(*(self._reconcile_model(self._models[s.name]) for s in specs))
        failures: dict[tuple[str, int], ServingError | None] = {}
        for name in new:
            model = self._models[name]
            if not self.is_available(name):
                ended = [s for s in model.versions.values() if s.error is not None]
                for status in ended or [VersionStatus(-1, State.END)]:
                    failures[(name, status.version)] = status.error
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

    def _configure(self, spec: ModelSpecConfig) -> None:
        """Take ``spec`` into the config; a new or changed model gets a fresh try at versions
        that failed before."""
        model = self._models.get(spec.name)
        if model is None:
            self._models[spec.name] = _Model(spec)
            return
        if model.active and model.spec == spec:
            return
        model.spec, model.active, model.superseded = spec, True, asyncio.Event()
        for version, status in list(model.versions.items()):
            if status.state == State.END and status.error is not None:
                del model.versions[version]

    async def _retire(self, model: _Model) -> None:
        """Unload every version of a model the config no longer lists."""
        for version in sorted(model.servables):
            await self._unload(model, version)
        model.active = False
        log.info("model %s removed from the config", model.spec.name)
        self._changed()

    # -- reconciliation -------------------------------------------------------------------------
    async def reconcile(self) -> None:
        """Scan disk once and load / unload versions so that each model serves its policy."""
        async with self._lock:
            active = [m for m in self._models.values() if m.active]
            await asyncio.gather(*(self._reconcile_model(m) for m in active))

    async def unload_all(self) -> None:
        """Unload every servable (shutdown)."""
        async with self._lock:
            for model in self._models.values():
                for version in sorted(model.servables):
                    await self._unload(model, version)

    async def _reconcile_model(self, model: _Model) -> None:
        on_disk = versions.versions_on_disk(model.spec.base_path)
        aspired = model.spec.select_versions(on_disk)
        for version in aspired:
            if version in model.servables:
                continue
            status = model.versions.get(version)
            if status is not None and status.state == State.END and status.error is not None:
                continue  # failed before (retries spent); a changed config tries again
            await self._load(model, version, on_disk[version])
        if any(v in model.servables for v in aspired) or not aspired:
            for version in sorted(model.servables):
                if version not in aspired:
                    await self._unload(model, version)

    async def _load(self, model: _Model, version: int, directory: str) -> None:
        name = model.spec.name
        status = VersionStatus(version, State.LOADING)
        model.versions[version] = status
        self._changed()
        try:
            servable, reports = await self._loader.load(
                model.spec, version, directory, model.superseded
            )
        except ServingError as exc:
            log.error("failed to load %s version %d: %s", name, version, exc.message)
            status.state, status.error = State.END, exc
            self._changed()
            return
        model.servables[version] = servable
        status.state, status.warmup = State.AVAILABLE, reports
        if any(r.runs for r in reports):
            runs = ", ".join(f"{r.runs} runs on worker {r.worker}" for r in reports)
            took = 1000 * max(r.seconds for r in reports)
            log.info("warmed up %s version %d: %s in %.1f ms", name, version, runs, took)
        log.info("serving %s version %d (%s)", name, version, servable.platform)
        self._changed()

    async def _unload(self, model: _Model, version: int) -> None:
        servable = model.servables.pop(version)
        status = model.versions[version]
        status.state = State.UNLOADING
        self._changed()
        if self._before_unload is not None:
            await self._before_unload(servable)
        await self._workers.unload(servable.key)
        status.state = State.END
        log.info("unloaded %s version %d", model.spec.name, version)
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()
