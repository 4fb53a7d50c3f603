"""The transport-agnostic serving core: predict, metadata, status, readiness.

gRPC and REST adapters convert their requests into the plain types here, await the core and convert
back. Nothing here knows about protobuf or HTTP.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from gateway.batching.clock import Clock
from gateway.batching.scheduler import BatchObserver, BatchScheduler
from gateway.config.batching_options import BatchingOptions, per_model_options
from gateway.config.model_config import ConfigError
from gateway.errors import FailedPrecondition, ServingError
from gateway.parallel.dispatcher import Dispatcher
from gateway.serving.models import ModelManager, Servable, VersionStatus
from gateway.serving.signature import Signature, find_signature

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelRef:
    """Which servable a request names: a model, and at most one of version or label."""

    name: str
    version: int | None = None
    label: str | None = None


Decoder = Callable[[Signature], Mapping[str, np.ndarray]]
"""Turns one request's wire tensors into arrays, given the signature they are meant for (so a
codec can check names, dtypes and sizes against it before expanding anything). Raises
InvalidArgument."""


@dataclass(frozen=True)
class PredictResult:
    """Outputs of one Predict, with the servable that produced them."""

    model: str
    version: int
    signature_name: str
    outputs: dict[str, np.ndarray]


@dataclass(frozen=True)
class BatchingPolicy:
    """Which batching options each queue gets.

    ``options``: for every queue (``BatchingOptions.unbatched()`` when batching is off).
    ``per_model``: read ``batching_params.pbtxt`` from a version's folder when present.
    ``base_paths``: model name → base path (to find that folder). ``workers``: resolves
    ``num_batch_threads`` 0.
    """

    options: BatchingOptions
    workers: int
    per_model: bool = False
    base_paths: Mapping[str, str] | None = None

    def check_version(self, model: str, version: int, directory: str) -> None:
        """Fail a version's load early (FailedPrecondition) when its batching file is invalid."""
        if self.per_model:
            try:
                per_model_options(directory, self.options)
            except ConfigError as exc:
                raise FailedPrecondition(str(exc)) from None

    def for_servable(self, servable: Servable) -> BatchingOptions:
        options = self.options
        if self.per_model and self.base_paths and servable.model in self.base_paths:
            directory = os.path.join(self.base_paths[servable.model], str(servable.version))
            options = per_model_options(directory, options)
        if options.solo and not options.num_batch_threads:
            # Unbatched: let each worker hold a second request in its ring (no idle gap).
            return replace(options, num_batch_threads=2 * max(1, self.workers))
        return replace(options, num_batch_threads=options.threads(self.workers))


class ServingCore:
    """Validates requests against signatures and runs them through per-queue batch schedulers."""

    def __init__(
        self,
        models: ModelManager,
        dispatcher: Dispatcher,
        batching: BatchingPolicy,
        *,
        clock: Clock | None = None,
        observer: Callable[[Servable, str], BatchObserver | None] | None = None,
    ) -> None:
        self.models = models
        self.batching = batching
        self._dispatcher = dispatcher
        self._clock = clock
        self._observer = observer
        self._schedulers: dict[tuple[str, str], BatchScheduler] = {}

    def servable(self, ref: ModelRef) -> Servable:
        return self.models.resolve(ref.name, ref.version, ref.label)

    def signature(self, ref: ModelRef, signature_name: str) -> tuple[Servable, Signature]:
        servable = self.servable(ref)
        return servable, find_signature(servable.signatures, signature_name)

    async def predict(
        self,
        ref: ModelRef,
        signature_name: str,
        decode: Decoder,
        output_filter: Sequence[str] = (),
        deadline: float | None = None,
    ) -> PredictResult:
        """Run one request; ``deadline`` is in ``time.monotonic()`` seconds (None = no deadline).

        The model and signature are looked up first, so an unknown model is NOT_FOUND however bad
        the tensors are; then ``decode`` turns the request's tensors into arrays for that
        signature, and they are validated against it before anything is queued.

        Raises ServingError subclasses: NotFound, FailedPrecondition (unknown signature),
        InvalidArgument (inputs or output_filter), DeadlineExceeded, Unavailable, ...
        """
        servable, signature = self.signature(ref, signature_name)
        inputs = decode(signature)
        signature.validate_inputs(inputs)
        outputs = signature.select_outputs(output_filter)
        scheduler = self.scheduler(servable, signature.name)
        result = await scheduler.submit(inputs, outputs, deadline)
        return PredictResult(servable.model, servable.version, signature.name, result)

    def scheduler(self, servable: Servable, signature_name: str) -> BatchScheduler:
        """The batch queue of (servable, signature), created on first use."""
        queue_key = (servable.key, signature_name)
        scheduler = self._schedulers.get(queue_key)
        if scheduler is None:
            try:
                options = self.batching.for_servable(servable)
            except ConfigError as exc:
                log.error("%s", exc)
                raise FailedPrecondition(str(exc)) from None
            observer = self._observer(servable, signature_name) if self._observer else None
            scheduler = BatchScheduler(
                servable_key=servable.key,
                signature=signature_name,
                options=options,
                dispatcher=self._dispatcher,
                clock=self._clock,
                observer=observer,
            )
            self._schedulers[queue_key] = scheduler
        return scheduler

    async def drain(self, servable_key: str) -> None:
        """Run what is queued for a servable about to be unloaded; then forget its queues."""
        keys = [k for k in self._schedulers if k[0] == servable_key]
        for key in keys:
            await self._schedulers[key].drain()
            del self._schedulers[key]

    def fail_all(self, error: ServingError) -> None:
        """Fail every queued request (shutdown after the drain grace period)."""
        for scheduler in self._schedulers.values():
            scheduler.fail_all(error)

    def metadata(self, ref: ModelRef) -> tuple[Servable, dict[str, Signature]]:
        """The servable and all its signatures (GetModelMetadata's ``signature_def``)."""
        servable = self.servable(ref)
        return servable, servable.signatures

    def status(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> list[VersionStatus]:
        """Version states of a model (GetModelStatus)."""
        if label is not None:
            version = self.models.resolve(name, None, label).version
        return self.models.statuses(name, version)

    def ready(self) -> bool:
        """True when every configured model has an AVAILABLE version."""
        return self.models.all_available()
