"""The transport-agnostic serving core: predict, metadata, status, readiness.

gRPC and REST adapters convert their requests into the plain types here, await the core and convert
back. Nothing here knows about protobuf or HTTP.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from gateway.batching.queues import BatchQueues
from gateway.config.model_config import ModelSpecConfig
from gateway.errors import DeadlineExceeded
from gateway.images.decoder import ImageDecoder
from gateway.serving.budget import MemoryBudget, inputs_nbytes
from gateway.serving.inline_path import InlinePlan, InlinePlans
from gateway.serving.inputs import (
    TEXT_PLATFORMS,
    Decoded,
    carries_images,
    check_text,
    validated,
)
from gateway.serving.registry import Models, Servable, VersionStatus
from gateway.serving.signature import Signature, find_signature

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelRef:
    """Which servable a request names: a model, and at most one of version or label."""

    name: str
    version: int | None = None
    label: str | None = None


InputsDecoder = Callable[[Signature], Decoded]
"""Reads one request's wire tensors for the signature they are meant for (a codec may need its
dtypes to convert, as REST JSON does), bounding their sizes; the core validates what they declare
(:func:`gateway.serving.inputs.validated`). Raises InvalidArgument / ResourceExhausted."""


@dataclass(slots=True)
class PredictResult:
    """Outputs of one Predict, with the servable that produced them. ``outputs`` are read-only
    views on a worker's output space, readable only while the encoder given to
    :meth:`ServingCore.predict` runs (:mod:`gateway.worker_channel.lease`)."""

    model: str
    version: int
    signature_name: str
    outputs: Mapping[str, np.ndarray]


R = TypeVar("R")
PredictEncoder = Callable[[PredictResult], R]
"""Turns a result into what the protocol answers (a response message, JSON bytes, owned copies).
Synchronous: it runs while the outputs' space is held, which is returned as it returns."""


class ServingCore:
    """Validates requests against signatures and runs them: a version placed in this front end
    on its short path (``inline``: :mod:`gateway.serving.inline_path`), any other through its
    batch queue to the workers."""

    def __init__(
        self,
        models: Models,
        queues: BatchQueues[Servable],
        *,
        inline: InlinePlans | None = None,
        inflight_bytes: int | None = None,
        images: ImageDecoder | None = None,
    ) -> None:
        self.models = models
        self.queues = queues
        self.inline = inline
        self.budget = MemoryBudget(inflight_bytes) if inflight_bytes is not None else None
        """Bounds the decoded inputs held by in-flight requests (None: unbounded)."""
        self.images = images or ImageDecoder()
        """Decodes encoded images off the loop (default: one thread, the default bounds)."""

    def servable(self, ref: ModelRef) -> Servable:
        return self.models.resolve(ref.name, ref.version, ref.label)

    def signature(self, ref: ModelRef, signature_name: str) -> tuple[Servable, Signature]:
        servable = self.servable(ref)
        return servable, find_signature(servable.signatures, signature_name)

    def predict(
        self,
        ref: ModelRef,
        signature_name: str,
        decode: InputsDecoder,
        encode: PredictEncoder[R],
        output_filter: Sequence[str] = (),
        deadline: float | None = None,
        *,
        check_dtypes: bool = True,
    ) -> Coroutine[Any, Any, R]:
        """Run one request: an awaitable of ``encode`` of its result; ``deadline`` is in
        ``time.monotonic()`` seconds (None = no deadline). The lookups happen in this call,
        the rest as it is awaited.

        The model and signature are looked up first, so an unknown model is NOT_FOUND however bad
        the tensors are; then ``decode`` reads the request's tensors for that signature, and what
        they declare is validated against it once, before anything is converted or queued (dtypes
        only with ``check_dtypes``: serialized Examples feed a TensorFlow signature's Examples
        input whatever dtype it declares, as in TF Serving); a runtime that takes strings as text
        gets only UTF-8 (:func:`~gateway.serving.inputs.check_text`), so one caller's bad value
        never fails a batch. Encoded images given to an image input
        (:attr:`~gateway.serving.signature.Signature.image_inputs`) are decoded into its tensor
        off the loop, before the request is queued.

        The decoded inputs count against the in-flight budget until the run is done. The outputs
        are views on the worker's output space: ``encode`` reads them, and the space goes back
        as it returns or raises (the core owns that lease; protocols never see it).

        Raises ServingError subclasses: NotFound, FailedPrecondition (unknown signature),
        InvalidArgument (inputs or output_filter), ResourceExhausted (the in-flight budget),
        DeadlineExceeded, Unavailable, ...
        """
        servable = self.models.resolve(ref.name, ref.version, ref.label)
        signature = find_signature(servable.signatures, signature_name)
        inline = self.inline
        plan = None if inline is None or not check_dtypes else inline.get(servable, signature)
        if plan is not None:  # :meth:`run`'s choice, written here: one call less per Predict
            return self._inline(plan, servable, signature, decode, encode, output_filter, deadline)
        return self._queued(
            servable, signature, decode, encode, output_filter, deadline, check_dtypes=check_dtypes
        )

    def run(
        self,
        servable: Servable,
        signature: Signature,
        decode: InputsDecoder,
        encode: PredictEncoder[R],
        output_filter: Sequence[str] = (),
        deadline: float | None = None,
        *,
        check_dtypes: bool = True,
    ) -> Coroutine[Any, Any, R]:
        """:meth:`predict` on a servable and signature already looked up (a protocol that reads
        the model's signature to name it, as V2 does, looks it up once)."""
        inline = self.inline
        plan = None if inline is None or not check_dtypes else inline.get(servable, signature)
        if plan is not None:
            return self._inline(plan, servable, signature, decode, encode, output_filter, deadline)
        return self._queued(
            servable, signature, decode, encode, output_filter, deadline, check_dtypes=check_dtypes
        )

    async def _inline(
        self,
        plan: InlinePlan,
        servable: Servable,
        signature: Signature,
        decode: InputsDecoder,
        encode: PredictEncoder[R],
        output_filter: Sequence[str],
        deadline: float | None,
    ) -> R:
        """The short path (:mod:`gateway.serving.inline_path`): the request's arrays straight
        from its codec when they are exactly the plan's, else through the one validation; a
        call the plan cannot take here (more rows than a run here may have, a stopped run)
        goes to the workers."""
        decoded = decode(signature)
        fast = decoded.fast_arrays(plan)
        if fast is None:
            arrays = await self._validated(servable, signature, decoded, True)
            rows = plan.matches(arrays)
        else:
            arrays, rows = fast
        outputs = signature.select_outputs(output_filter) if output_filter else plan.outputs
        if not 0 < rows <= plan.max_rows or (not plan.solo and rows > plan.max_batch_rows):
            return await self._submit(servable, signature, arrays, encode, outputs, deadline)
        budget = self.budget
        nbytes = rows * plan.row_bytes
        if plan.solo:  # the run holds its inputs only while it runs: nothing else runs meanwhile
            if budget is not None and budget.held_bytes + nbytes > budget.limit_bytes:
                budget.reserve(nbytes)  # refused, with its text
            if deadline is not None and time.monotonic() >= deadline:
                raise DeadlineExceeded("Deadline exceeded before the request was queued")
            result = plan.run_one(arrays, rows, outputs)
        elif budget is None:
            result = await plan.join(arrays, rows, outputs, deadline)
        else:
            budget.reserve(nbytes)
            try:
                result = await plan.join(arrays, rows, outputs, deadline)
            finally:
                budget.release(nbytes)
        if result is None:  # RERUN: stopped at the wall-clock limit
            return await self._submit(servable, signature, arrays, encode, outputs, deadline)
        return encode(PredictResult(servable.model, servable.version, signature.name, result))

    async def _queued(
        self,
        servable: Servable,
        signature: Signature,
        decode: InputsDecoder,
        encode: PredictEncoder[R],
        output_filter: Sequence[str],
        deadline: float | None,
        *,
        check_dtypes: bool,
    ) -> R:
        """A call through its batch queue to the workers."""
        inputs = await self._validated(servable, signature, decode(signature), check_dtypes)
        if servable.platform in TEXT_PLATFORMS:
            check_text(inputs)
        outputs = signature.select_outputs(output_filter)
        return await self._submit(servable, signature, inputs, encode, outputs, deadline)

    async def _validated(
        self, servable: Servable, signature: Signature, decoded: Decoded, check_dtypes: bool
    ) -> dict[str, np.ndarray]:
        """The request's arrays, validated (:func:`~gateway.serving.inputs.validated`); the
        JPEG/PNG strings an image input was given decoded into its tensor off the loop
        (:mod:`gateway.images`), before anything is queued: only this caller fails."""
        inputs = validated(signature, decoded, check_dtypes=check_dtypes)
        if signature.image_inputs and carries_images(signature, inputs):
            inputs = await self.images.decode(servable.directory, signature.image_specs(), inputs)
        return inputs

    async def _submit(
        self,
        servable: Servable,
        signature: Signature,
        inputs: dict[str, np.ndarray],
        encode: PredictEncoder[R],
        outputs: list[str],
        deadline: float | None,
    ) -> R:
        """Validated ``inputs`` through their batch queue; the encoded answer."""
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
        try:
            return encode(PredictResult(servable.model, servable.version, signature.name, result))
        finally:
            result.release()  # encoded (copies now): the worker may reuse the space

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
