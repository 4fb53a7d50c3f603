"""The sizing policy: how many worker processes, runtime threads and front ends share the CPUs.

:func:`resolve_worker_threads` divides the CPU budget (:mod:`gateway.config.machine`) between
worker processes and their runtime thread pools so that ``workers x intra_op`` never
oversubscribes the cores; :func:`resolve_frontends` decides how many front ends share them.
"""

from __future__ import annotations

import logging

from gateway.config.machine import available_cpus
from gateway.config.settings import Settings
from gateway.config.validation import SettingsError

log = logging.getLogger(__name__)


def resolve_worker_threads(settings: Settings, cpus: int | None = None) -> tuple[int, int, int]:
    """Decide ``(workers, intra_op_threads, inter_op_threads)`` for the worker pool.

    ``cpus`` is the CPU budget (default :func:`available_cpus`). Per-pool thread counts follow TF
    Serving: ``tensorflow_intra_op_parallelism`` / ``tensorflow_inter_op_parallelism`` when either
    is set, else ``tensorflow_session_parallelism`` for both; 0 means auto. Then:

    - workers auto, intra auto: one single-threaded worker per CPU;
    - workers auto, intra ``k``: ``max(1, cpus // k)`` workers of ``k`` threads;
    - workers ``n``, intra auto: ``max(1, cpus // n)`` threads each;
    - both set: used as given.

    Auto-derived values always satisfy ``workers * intra_op <= cpus``. Only explicit values can
    exceed it (e.g. ``--workers=8`` on 2 CPUs); they are honoured and a warning is logged.
    Inter-op auto is 1: parallelism comes from the workers, not from concurrent operators.
    """
    cpus = available_cpus() if cpus is None else cpus
    if cpus < 1:
        raise SettingsError(f"cpus must be >= 1, got {cpus}")
    if settings.tensorflow_intra_op_parallelism > 0 or settings.tensorflow_inter_op_parallelism > 0:
        intra = settings.tensorflow_intra_op_parallelism
        inter = settings.tensorflow_inter_op_parallelism
    else:
        intra = inter = settings.tensorflow_session_parallelism
    workers = settings.workers
    if workers == 0 and intra == 0:
        workers, intra = cpus, 1
    elif workers == 0:
        workers = max(1, cpus // intra)
    elif intra == 0:
        intra = max(1, cpus // workers)
    inter = inter or 1
    if workers * intra > cpus:
        log.warning(
            "%d workers x %d intra-op threads = %d threads on %d CPUs: oversubscribed",
            workers,
            intra,
            workers * intra,
            cpus,
        )
    return workers, intra, inter


MAX_AUTO_FRONTENDS = 8
"""The most front ends ``--frontends=0`` starts."""
MAX_AUTO_CHANNELS = 64
"""The most (front end, worker) channels ``--frontends=0`` makes: each holds its own input and
output areas (``--worker_arena_mb`` each), and a worker's output area, a ring, is touched whole
over time."""


def resolve_frontends(settings: Settings, cpus: int | None = None) -> int:
    """How many front-end processes serve (``--frontends``; 1: one process serves everything).

    ``--frontends=N`` (N >= 1) is used as given. 0 (auto) derives it from the CPU budget (default
    :func:`available_cpus`) and the workers (:func:`resolve_worker_threads`): one
    front end per CPU — a small model's request costs its front end several times what it costs
    its worker (the transport: gRPC, protobuf, the event loop), and one event loop uses one core
    at most — but at most :data:`MAX_AUTO_FRONTENDS`, and at most ``MAX_AUTO_CHANNELS //
    workers`` (at least 2) so that front ends × workers channels stay few; 1 on one CPU (one
    process: a supervisor would be one more process on the same core for nothing). For
    example: 1 CPU → 1; 2 → 2; 4 → 4; 8 CPUs and 8 workers → 8; 16 CPUs and 16 workers → 4.
    Front ends idle on a model whose runs dominate (ResNet50) cost only their memory.
    """
    if settings.frontends > 0:
        return settings.frontends
    cpus = available_cpus() if cpus is None else cpus
    if cpus < 2:
        return 1
    workers = settings.workers or resolve_worker_threads(settings, cpus)[0]
    by_channels = max(2, MAX_AUTO_CHANNELS // max(1, workers))
    return min(cpus, MAX_AUTO_FRONTENDS, by_channels)


def resolve_image_threads(settings: Settings, cpus: int | None = None) -> int:
    """Each front end's image-decoding threads (``--image_decode_threads``; 0, auto: the CPU
    budget divided among the front ends of :func:`resolve_frontends`, at least 1)."""
    if settings.image_decode_threads > 0:
        return settings.image_decode_threads
    cpus = available_cpus() if cpus is None else cpus
    return max(1, cpus // resolve_frontends(settings, cpus))
