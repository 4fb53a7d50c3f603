"""Loading one model version on the workers: one attempt, and the retries around it.

An attempt checks the version (the ``before_load`` hook: e.g. its ``batching_params.pbtxt``),
detects its platform (:mod:`gateway.models.versions`), and has the workers load it, warm it up
and route to it (:meth:`Workers.load`); the worker's reply gives the version's signatures. An
attempt holds one of the loader's :class:`~gateway.models.load_slots.LoadSlots` while it runs.
Whatever an attempt raises is its failure: a ServingError as it is, anything else (a bug, a
worker's channel gone under it) as INTERNAL, logged with its traceback. A failed attempt is
reported (``on_failure``: GetModelStatus shows it while the retry waits) and retried
``retries`` times, ``retry_interval_s`` apart (TF Serving's ``LoaderHarness`` retry), holding no
slot while it waits, unless the model is superseded meanwhile (a new config drops or changes
it); then the last error stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.config.machine import available_cpus
from gateway.config.model_config import ModelSpecConfig
from gateway.config.model_runtimes import RuntimeChoice, runtime_for
from gateway.config.model_workers import workers_for
from gateway.config.settings import Settings
from gateway.config.settings_models import model_cache_dir
from gateway.errors import Cancelled, FailedPrecondition, Internal, ServingError
from gateway.models import versions
from gateway.models.load_slots import LoadSlots
from gateway.serving.registry import Servable
from gateway.serving.signature import IMAGE_PLATFORMS
from gateway.storage.urls import is_url
from gateway.worker_channel.warmup_runs import Planner, WarmupReport, WarmupRun
from gateway.worker_pool.hosting import Loaded, LoadSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadOptions:
    """How versions are loaded: ``retries`` after a failed load (TF Serving's
    ``--max_num_load_retries``), ``retry_interval_s`` apart (``--load_retry_interval_micros``);
    ``allow_unavailable_labels`` (``--allow_version_labels_for_unavailable_models``);
    ``placement``: model name (or ``*``) → workers hosting it (``--model_workers``; absent:
    all); ``runtimes``: model name (or ``*``) → the runtime serving it (``--model_runtimes``;
    absent: the platform's own). ``threads``: most load attempts at once
    (``--num_load_threads``, whose 0 is TF Serving's one at a time); ``initial_threads``: the
    same while the first config loads (TF Serving's ``num_initial_load_threads``; 0:
    ``threads``)."""

    retries: int = 0
    retry_interval_s: float = 0.0
    allow_unavailable_labels: bool = False
    placement: Mapping[str, int] = field(default_factory=dict)
    runtimes: Mapping[str, RuntimeChoice] = field(default_factory=dict)
    threads: int = 1
    initial_threads: int = 0
    cache_dir: str = ""
    cache_max_bytes: int = 0

    @property
    def cache_root(self) -> str:
        """Where versions from object stores are cached (``--model_cache_dir``)."""
        return model_cache_dir(self.cache_dir)

    @classmethod
    def from_settings(cls, settings: Settings) -> LoadOptions:
        threads = max(1, settings.num_load_threads)
        return cls(
            retries=settings.max_num_load_retries,
            retry_interval_s=max(0, settings.load_retry_interval_micros) / 1e6,
            allow_unavailable_labels=settings.allow_version_labels_for_unavailable_models,
            placement=settings.model_worker_counts,
            runtimes=settings.model_runtime_choices,
            threads=threads,
            initial_threads=max(threads, INITIAL_THREADS_PER_CPU * available_cpus()),
            cache_dir=settings.model_cache_dir,
            cache_max_bytes=settings.model_cache_max_bytes,
        )


CANCELLED = "Loading of servable cancelled"
"""TF Serving's text (``LoaderHarness``) for a load its model no longer wants."""

INITIAL_THREADS_PER_CPU = 4
"""TF Serving's ``num_initial_load_threads``: 4 × the schedulable CPUs."""

Failed = Callable[[ServingError], None]
"""Told each failed attempt's error while a retry is to come."""


Warmup = Callable[[Servable], Awaitable[Sequence[WarmupRun]]]
"""The warmup runs of a servable being loaded (ServingError: its warmup data is unusable)."""

Fetch = Callable[[str, bool], Awaitable[str]]
"""The local folder of a version at an object URL (downloaded if needed; the bool: list it
again, for a retried load); ServingError when it cannot be had."""


class Workers(Protocol):
    """What the model lifecycle asks of the workers (a
    :class:`~gateway.worker_pool.pool.WorkerPool`)."""

    async def load(self, spec: LoadSpec, warmup: Planner | None = None) -> Loaded:
        """Load, warm up and route a servable; ServingError when it cannot serve."""
        ...

    async def unload(self, key: str) -> None:
        """Stop routing a servable and unload it everywhere."""
        ...

    def hosts(self, key: str) -> bool:
        """True when a live worker serves ``key``."""
        ...


@dataclass(frozen=True)
class VersionLoader:
    """Loads versions on ``workers`` with ``intra_op`` / ``inter_op`` runtime threads and
    SavedModel ``tags``. ``before_load``: called with (model, version, version directory) before
    each attempt; a ServingError it raises fails that attempt. ``warmup``: the runs replayed
    before a version serves. ``slots``: what an attempt holds while it runs (None: no bound).
    ``fetch``: brings a version at an object URL into a local folder first (None: local paths
    only)."""

    workers: Workers
    intra_op: int
    inter_op: int
    tags: tuple[str, ...] = ("serve",)
    options: LoadOptions = field(default_factory=LoadOptions)
    before_load: Callable[[str, int, str], None] | None = None
    warmup: Warmup | None = None
    slots: LoadSlots | None = None
    fetch: Fetch | None = None

    async def load(
        self,
        spec: ModelSpecConfig,
        version: int,
        directory: str,
        superseded: asyncio.Event,
        on_failure: Failed | None = None,
    ) -> tuple[Servable, tuple[WarmupReport, ...]]:
        """Load ``version`` of ``spec`` from ``directory``, retrying as the options say while
        ``superseded`` is not set (``on_failure`` is told each failure a retry follows); the
        servable and its warmup per worker, or the last attempt's ServingError."""
        retries, attempt = self.options.retries, 0
        while True:
            try:
                return await self._attempt(spec, version, directory, superseded, attempt > 0)
            except ServingError as exc:
                attempt += 1
                if attempt > retries or superseded.is_set():
                    raise
                interval = self.options.retry_interval_s
                log.warning(
                    "loading %s version %d failed (attempt %d of %d); retrying in %g s: %s",
                    spec.name, version, attempt, retries + 1, interval, exc.message,
                )  # fmt: skip
                if on_failure is not None:
                    on_failure(exc)
                await _pause(superseded, interval)
                if superseded.is_set():
                    raise

    async def _attempt(
        self,
        spec: ModelSpecConfig,
        version: int,
        directory: str,
        superseded: asyncio.Event,
        retry: bool = False,
    ) -> tuple[Servable, tuple[WarmupReport, ...]]:
        """One attempt in a slot; whatever it raises becomes a ServingError. Cancelled (TF
        Serving's "Loading of servable cancelled") when the model is superseded before a slot
        is free."""
        slots = self.slots
        if slots is not None and not await slots.take(superseded):
            raise Cancelled(CANCELLED)
        try:
            return await self._load_once(spec, version, directory, retry)
        except ServingError:
            raise
        except Exception as exc:
            log.exception("loading %s version %d raised %s", spec.name, version, type(exc).__name__)
            raise Internal(f"{type(exc).__name__}: {exc}") from exc
        finally:
            if slots is not None:
                slots.release()

    async def _load_once(
        self, spec: ModelSpecConfig, version: int, directory: str, retry: bool = False
    ) -> tuple[Servable, tuple[WarmupReport, ...]]:
        """One attempt: bring a version at an object URL into its local folder (listed again
        on a ``retry``), load on the model's workers, warm up, route; ServingError on
        failure."""
        if is_url(directory):
            if self.fetch is None:
                raise FailedPrecondition(f"{directory}: object URLs are not read here")
            directory = await self.fetch(directory, retry)
        if self.before_load is not None:
            self.before_load(spec.name, version, directory)
        platform = versions.detect_platform(spec.platform, directory)
        key = f"{spec.name}:{version}"
        choice = _runtime(spec.name, platform, self.options.runtimes)
        load = LoadSpec(
            key=key,
            path=versions.model_path(platform, directory),
            platform=platform,
            intra_op=self.intra_op,
            inter_op=self.inter_op,
            tags=self.tags,
            workers=workers_for(spec.name, self.options.placement),
            runtime="" if choice is None else choice.runtime,
            precision="" if choice is None else choice.precision,
        )
        built: list[Servable] = []

        async def plan(wire: Mapping[str, Any]) -> Sequence[WarmupRun]:
            signatures = versions.signatures_of(
                wire,
                check_shapes=platform != "tensorflow",
                encoded_images=platform in IMAGE_PLATFORMS,
            )
            runtime = str(wire.get("runtime", ""))
            servable = Servable(spec.name, version, key, platform, signatures, directory, runtime)
            built.append(servable)
            return () if self.warmup is None else await self.warmup(servable)

        loaded = await self.workers.load(load, plan)
        return built[0], loaded.warmup


def _runtime(
    model: str, platform: str, runtimes: Mapping[str, RuntimeChoice]
) -> RuntimeChoice | None:
    """The runtime ``--model_runtimes`` asks for ``model`` (None: the platform's own);
    FailedPrecondition when it cannot serve the version's platform."""
    choice = runtime_for(model, runtimes)
    try:
        return None if choice is None else choice.for_platform(platform)
    except ValueError as exc:
        raise FailedPrecondition(f"model {model}: {exc} (--model_runtimes)") from None


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    """Wait ``seconds`` (none when <= 0), or until ``stop`` is set."""
    if seconds > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
