"""Warmup as plain data, which both roles pass around.

A version's warmup requests, decoded by its protocol (``gateway/tfserving/warmup.py`` reads TF
Serving's ``assets.extra/tf_serving_warmup_requests``), become :class:`WarmupRun` values that
the supervisor's pool replays on each worker before routing the version there
(:mod:`gateway.worker_pool.warmup_replay`); each worker's :class:`WarmupReport` is kept in the
version's status (:class:`~gateway.serving.registry.VersionStatus`) and travels to every front
end in the registry's snapshot.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class WarmupRun:
    """One warmup request as a worker runs it: the inputs of one signature, fetched ``outputs``
    (None: all), repeated ``iterations`` times (>= 1). ``what`` names it in errors and logs.
    A run that is not ``required`` (one tensorgate made up, such as a batch-size warmup) is
    logged when it fails; a failing required run fails the load."""

    signature: str
    inputs: Mapping[str, np.ndarray]
    outputs: tuple[str, ...] | None = None
    iterations: int = 1
    what: str = "warmup request"
    required: bool = True


@dataclass(frozen=True)
class WarmupReport:
    """Warmup of one servable on one worker: ``runs`` as that worker counted them, and the
    wall time of the replay in seconds."""

    worker: int
    runs: int
    seconds: float


Planner = Callable[[Mapping[str, Any]], Awaitable[Sequence[WarmupRun]]]
"""Given a servable's signature (a worker's ``load`` reply), the warmup runs to replay; raises
ServingError when the warmup data is unusable (the load then fails)."""
