"""The transport-agnostic serving core: predict, metadata, status, readiness.

gRPC and REST adapters convert their requests into the plain types here, await the core and convert
back. Nothing here knows about protobuf or HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gateway.config.model_config import ModelSpecConfig
from gateway.parallel.lease import Outputs
from gateway.serving.budget import MemoryBudget, inputs_nbytes
from gateway.serving.queues import BatchQueues
from gateway.serving.registry import Models, Servable, VersionStatus
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
    """Outputs of one Predict, with the servable that produced them. ``outputs`` are read-only
    views on a worker's output space: call :meth:`release` once they are encoded, in a
    ``finally`` (:mod:`gateway.parallel.lease`)."""

    model: str
    version: int
    signature_name: str
    outputs: Outputs

    def release(self) -> None:
        """Return the outputs' lease reference (idempotent)."""
        self.outputs.release()


class ServingCore:
    """Validates requests against signatures and runs them through per-queue batch schedulers."""

    def __init__(
        self, models: Models, queues: BatchQueues, *, inflight_bytes: int | None = None
    ) -> None:
        self.models = models
        self.queues = queues
        self.budget = MemoryBudget(inflight_bytes) if inflight_bytes is not None else None
        """Bounds the decoded inputs held by in-flight requests (None: unbounded)."""

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
        *,
        check_dtypes: bool = True,
    ) -> PredictResult:
        """Run one request; ``deadline`` is in ``time.monotonic()`` seconds (None = no deadline).

        The model and signature are looked up first, so an unknown model is NOT_FOUND however bad
        the tensors are; then ``decode`` turns the request's tensors into arrays for that
        signature, and they are validated against it before anything is queued (dtypes only
        with ``check_dtypes``: serialized Examples feed a TensorFlow signature's Examples input
        whatever dtype it declares, as in TF Serving).

        The decoded inputs count against the in-flight budget until the call returns.

        The caller owns the result's lease reference (:meth:`PredictResult.release`).

        Raises ServingError subclasses: NotFound, FailedPrecondition (unknown signature),
        InvalidArgument (inputs or output_filter), ResourceExhausted (the in-flight budget),
        DeadlineExceeded, Unavailable, ...
        """
        servable, signature = self.signature(ref, signature_name)
        inputs = decode(signature)
        signature.validate_inputs(inputs, check_dtypes=check_dtypes)
        outputs = signature.select_outputs(output_filter)
        scheduler = self.queues.get(servable, signature.name)
        budget = self.budget
        if budget is None:
            result = await scheduler.submit(inputs, outputs, deadline)
        else:
            nbytes = inputs_nbytes(inputs)
            budget.reserve(nbytes)
            try:
                result = await scheduler.submit(inputs, outputs, deadline)
            finally:
                budget.release(nbytes)
        return PredictResult(servable.model, servable.version, signature.name, result)

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

    async def reload(self, specs: Sequence[ModelSpecConfig]) -> None:
        """Serve exactly ``specs`` (HandleReloadConfigRequest; see :meth:`ModelControl.apply`)."""
        await self.models.apply(specs)

    def ready(self) -> bool:
        """True when every configured model has an AVAILABLE version."""
        return self.models.all_available()
