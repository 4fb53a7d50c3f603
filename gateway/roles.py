"""Who builds the serving parts, and how they are wired: the supervisor's and a front end's.

The **supervisor** holds the worker processes with their control links
(:class:`~gateway.worker_pool.pool.WorkerPool`) and the model lifecycle
(:class:`~gateway.models.manager.ModelManager`). A **front end** holds its run side (a
:class:`~gateway.runs.dispatcher.Dispatcher`: one run link per worker), its batch queues
(:class:`~gateway.batching.queues.BatchQueues`) and the request core
(:class:`~gateway.serving.core.ServingCore`), which reads the models through the read-only
registry (:mod:`gateway.serving.registry`). In one process (``--frontends 1``) three wires join
the two roles: the pool attaches each worker's channel to the front end's dispatcher, the manager
drains the front end's queues before it unloads a servable, and the core reads the manager. With
several front-end processes those wires become messages (:mod:`gateway.supervisor`,
:mod:`gateway.frontend`); the parts stay as they are: :func:`build_supervisor` and
:func:`build_front_end` build each process's half.

:func:`build` is the one-process composition: the gateway (:class:`~gateway.one_process.Gateway`),
the in-process test stack and the core's unit tests all use it. Its options come from the settings
(:meth:`Options.from_settings`) or are given (tests); the two seams of unit tests replace the pool
(a fake that loads nothing) and the dispatcher (fake worker links).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, overload

from gateway.batching.clock import Clock
from gateway.batching.policy import BatchingPolicy
from gateway.batching.queues import BatchQueues, ObserverFactory
from gateway.config.model_config import ModelSpecConfig
from gateway.config.settings import Settings
from gateway.config.settings_field import MIB
from gateway.config.sizing import resolve_image_threads, resolve_worker_threads
from gateway.images import options as image_options
from gateway.images.decoder import ImageDecoder
from gateway.images.options import ImageLimits
from gateway.models.loader import LoadOptions, Warmup, Workers
from gateway.models.manager import ModelManager
from gateway.runs.dispatcher import Dispatcher
from gateway.runs.inline_runs import InlineRuns, OnDemote, OnPlaced
from gateway.serving.core import ServingCore
from gateway.serving.inline_path import InlinePlans
from gateway.serving.registry import Models, Servable
from gateway.worker_pool.pool import PoolOptions, WorkerEvents, WorkerPool

W = TypeVar("W", bound=Workers)


@dataclass(frozen=True)
class Options:
    """What both roles are built with.

    ``pool``: the worker processes and their shared memory. ``batching``: each queue's options.
    ``intra_op`` / ``inter_op``: each model runtime's threads. ``saved_model_tags``: the
    SavedModel MetaGraph to load. ``load``: retries, labels and placement of versions.
    ``inflight_bytes``: the bound on decoded inputs held by in-flight requests (None: unbounded).
    ``inline_runs`` / ``inline_budget_bytes``: where light versions run
    (:mod:`gateway.runs.inline_cost`; ``never``, the default here, sends every run to the
    workers; the flag's default is ``auto``). ``images`` / ``image_threads``: the bounds on a
    request's encoded images and the front end's threads decoding them.
    """

    pool: PoolOptions
    batching: BatchingPolicy
    intra_op: int = 1
    inter_op: int = 1
    saved_model_tags: tuple[str, ...] = ("serve",)
    load: LoadOptions = field(default_factory=LoadOptions)
    inflight_bytes: int | None = None
    inline_runs: str = "never"
    inline_budget_bytes: int = 0
    images: ImageLimits = field(default_factory=ImageLimits)
    image_threads: int = 1

    @classmethod
    def from_settings(cls, settings: Settings, specs: Sequence[ModelSpecConfig]) -> Options:
        """The options the flags ask for (ConfigError for a bad batching parameters file)."""
        workers, intra_op, inter_op = resolve_worker_threads(settings)
        arena = settings.worker_arena_bytes
        return cls(
            pool=PoolOptions(
                workers=workers,
                input_bytes=arena,
                output_bytes=arena,
                ping_interval_s=settings.worker_ping_interval_seconds,
                ping_timeout_s=settings.worker_ping_timeout_seconds,
                log_format=settings.log_format,
            ),
            batching=BatchingPolicy.from_settings(settings, specs, workers),
            intra_op=intra_op,
            inter_op=inter_op,
            saved_model_tags=tuple(sorted(settings.saved_model_tag_set)),
            load=LoadOptions.from_settings(settings),
            inflight_bytes=settings.max_inflight_bytes,
            inline_runs=settings.inline_runs,
            inline_budget_bytes=settings.inline_budget_mb * MIB,
            images=ImageLimits(
                settings.max_image_pixels,
                settings.max_images_per_request,
                settings.max_request_bytes,
            ),
            image_threads=resolve_image_threads(settings),
        )


@dataclass(frozen=True)
class Stack(Generic[W]):
    """One process's serving parts: the supervisor's ``pool`` and ``models``; the front end's
    ``dispatcher``, ``queues``, ``core`` and ``inline`` (the versions it runs itself). Nothing
    is started: start the pool, then apply or reconcile the models."""

    pool: W
    models: ModelManager
    dispatcher: Dispatcher
    queues: BatchQueues[Servable]
    core: ServingCore
    inline: InlineRuns


@overload
def build(
    options: Options,
    specs: Sequence[ModelSpecConfig],
    *,
    on_change: Callable[[], None] | None = ...,
    observer: ObserverFactory[Servable] | None = ...,
    on_placed: OnPlaced | None = ...,
    warmup: Warmup | None = ...,
    clock: Clock | None = ...,
) -> Stack[WorkerPool]: ...


@overload
def build(
    options: Options,
    specs: Sequence[ModelSpecConfig],
    *,
    workers: W,
    dispatcher: Dispatcher,
    on_change: Callable[[], None] | None = ...,
    observer: ObserverFactory[Servable] | None = ...,
    on_placed: OnPlaced | None = ...,
    warmup: Warmup | None = ...,
    clock: Clock | None = ...,
) -> Stack[W]: ...


def build(
    options: Options,
    specs: Sequence[ModelSpecConfig],
    *,
    workers: Workers | None = None,
    dispatcher: Dispatcher | None = None,
    on_change: Callable[[], None] | None = None,
    observer: ObserverFactory[Servable] | None = None,
    on_placed: OnPlaced | None = None,
    warmup: Warmup | None = None,
    clock: Clock | None = None,
) -> Stack[Any]:
    """Build both roles' parts for ``specs`` in one process, wired together.

    ``on_change``: called when a worker comes up or dies and when a version's state changes.
    ``observer``: each batch queue's observer. ``on_placed``: hears where the front end's
    versions run (metrics). ``warmup``: the runs a version replays before it
    serves. ``clock``: the batch schedulers' clock (tests). ``workers`` and ``dispatcher``: the
    unit tests' seams, given together (a fake pool; a dispatcher over fake links); by default a
    :class:`WorkerPool` attached to a new dispatcher.
    """
    # The front end's run side and queues: they need nothing of the supervisor.
    dispatcher = dispatcher or Dispatcher()
    queues = BatchQueues(options.batching, dispatcher, clock=clock, observer=observer)
    # The supervisor: workers attached to that run side, versions that drain those queues first.
    if workers is None:
        workers = WorkerPool(options.pool, dispatcher=dispatcher, on_change=on_change)
    models = _manager(options, specs, workers, on_change, queues.drain, warmup)
    # The front end's core reads the models through the registry.
    inline = inline_runs(options, dispatcher, on_placed)
    core = _core(options, models, queues, inline, observer)
    return Stack(workers, models, dispatcher, queues, core, inline)


@dataclass(frozen=True)
class SupervisorParts:
    """The supervisor's half with several front ends: the worker pool (its own run side only
    carries warmup runs) and the model lifecycle."""

    pool: WorkerPool
    models: ModelManager


def build_supervisor(
    options: Options,
    specs: Sequence[ModelSpecConfig],
    *,
    dispatcher: Dispatcher,
    events: WorkerEvents,
    before_unload: Callable[[Servable], Awaitable[None]],
    on_change: Callable[[], None],
    warmup: Warmup | None = None,
) -> SupervisorParts:
    """The pool (workers that take channels handed over later; ``events`` hears of each one
    that comes and goes; ``dispatcher`` hears of routes) and the manager (``before_unload``:
    every front end's queues drain; ``on_change``: every change of the registry)."""
    pool = WorkerPool(
        replace(options.pool, handover=True),
        dispatcher=dispatcher,
        on_change=on_change,
        events=events,
    )
    models = _manager(options, specs, pool, on_change, before_unload, warmup)
    return SupervisorParts(pool, models)


def _manager(
    options: Options,
    specs: Sequence[ModelSpecConfig],
    workers: Workers,
    on_change: Callable[[], None] | None,
    before_unload: Callable[[Servable], Awaitable[None]],
    warmup: Warmup | None,
) -> ModelManager:
    """The model lifecycle over ``workers``, as ``options`` configure it (both roles)."""
    return ModelManager(
        workers,
        specs,
        intra_op=options.intra_op,
        inter_op=options.inter_op,
        saved_model_tags=options.saved_model_tags,
        options=options.load,
        on_change=on_change,
        before_load=_before_load(options),
        before_unload=before_unload,
        warmup=warmup,
    )


def _before_load(options: Options) -> Callable[[str, int, str], None]:
    """The checks of a version's own files before it loads: its batching parameters and its
    image options (FailedPrecondition for a bad one)."""

    def check(model: str, version: int, directory: str) -> None:
        options.batching.check_version(model, version, directory)
        image_options.check_version(model, version, directory)

    return check


def _core(
    options: Options,
    models: Models,
    queues: BatchQueues[Servable],
    inline: InlineRuns,
    observer: ObserverFactory[Servable] | None,
) -> ServingCore:
    """A front end's core over ``models``: the versions ``inline`` places here on their short
    path, the others through ``queues`` (both roles' compositions)."""
    plans = None
    if options.inline_runs != "never":
        plans = InlinePlans(inline, options.batching, observer)
    images = ImageDecoder(options.images, options.image_threads)
    return ServingCore(
        models, queues, inline=plans, inflight_bytes=options.inflight_bytes, images=images
    )


@dataclass(frozen=True)
class FrontEndParts:
    """A front-end process's half: its batch queues and core over its run side, and the
    versions it runs itself."""

    queues: BatchQueues[Servable]
    core: ServingCore
    inline: InlineRuns


def build_front_end(
    options: Options,
    models: Models,
    dispatcher: Dispatcher,
    *,
    observer: ObserverFactory[Servable] | None = None,
    on_placed: OnPlaced | None = None,
    on_demote: OnDemote | None = None,
) -> FrontEndParts:
    """Queues over ``dispatcher`` (the front end's run links) and a core reading ``models``
    (the registry the supervisor pushes); ``observer`` and ``on_placed`` as for :func:`build`;
    ``on_demote``: tells the supervisor of a version's stall."""
    queues = BatchQueues(options.batching, dispatcher, observer=observer)
    inline = inline_runs(options, dispatcher, on_placed, on_demote)
    core = _core(options, models, queues, inline, observer)
    return FrontEndParts(queues, core, inline)


def inline_runs(
    options: Options,
    dispatcher: Dispatcher,
    on_placed: OnPlaced | None = None,
    on_demote: OnDemote | None = None,
) -> InlineRuns:
    """The versions a front end runs itself (``dispatcher`` times the worker hop they are
    weighed against); ``on_placed`` hears where they run, ``on_demote`` of each stall."""
    return InlineRuns(
        mode=options.inline_runs,
        budget_bytes=options.inline_budget_bytes,
        hop_s=dispatcher.hop_s,
        max_output_bytes=options.pool.output_bytes,
        on_placed=on_placed,
        on_demote=on_demote,
    )
