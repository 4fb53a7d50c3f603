"""Classify, Regress and MultiInference: tf.Example requests on top of the serving core.

Transport-agnostic, like :mod:`gateway.serving.core`: the gRPC and REST adapters hand over a
:class:`~gateway.tfserving.codec.example.ExampleBatch` and get plain results back. Each task runs
as a Predict through :meth:`ServingCore.predict` (so it is validated and batched like one), on the
plan :mod:`~gateway.tfserving.inference_plans` makes (TF Serving's checks before a run), and its
outputs are checked by :mod:`~gateway.tfserving.inference_results` (TF Serving's checks after).

MultiInference: the first task's version or label picks the servable; tasks run concurrently; the
first failure fails the call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.errors import InvalidArgument
from gateway.parallel.lease import Outputs
from gateway.serving.core import ModelRef, ServingCore
from gateway.serving.registry import Servable
from gateway.tfserving.codec.example import ExampleBatch
from gateway.tfserving.inference_plans import (
    CLASSIFY_METHOD,
    OUTPUTS,
    REGRESS_METHOD,
    InferenceTask,
    TaskPlan,
    multi_inference_plans,
    single_plan,
)
from gateway.tfserving.inference_results import (
    CLASSES,
    SCORES,
    Classifications,
    Regressions,
    classifications,
    regressions,
)


@dataclass(frozen=True)
class InferenceResult:
    """What one Classify / Regress / MultiInference task produced, and by which servable.
    ``signature_name`` is as requested, ``serving_default`` when the request left it empty.
    ``result`` may view a worker's output space: call :meth:`release` once it is encoded."""

    model: str
    version: int
    signature_name: str
    result: Classifications | Regressions
    outputs: Outputs | None = field(default=None, compare=False)
    """The lease reference ``result`` reads through (:mod:`gateway.parallel.lease`)."""

    def release(self) -> None:
        """Return the lease reference (idempotent)."""
        if self.outputs is not None:
            self.outputs.release()


class InferenceService:
    """Classify, Regress and MultiInference over a :class:`ServingCore` (see the module doc)."""

    def __init__(self, core: ServingCore, *, method_name_check: bool = False) -> None:
        self._core = core
        self._method_name_check = method_name_check

    async def classify(
        self,
        ref: ModelRef,
        signature_name: str,
        examples: ExampleBatch,
        deadline: float | None = None,
    ) -> InferenceResult:
        """Classify ``examples`` (``deadline``: ``time.monotonic()`` seconds, None = none)."""
        return await self._single(ref, signature_name, CLASSIFY_METHOD, examples, deadline)

    async def regress(
        self,
        ref: ModelRef,
        signature_name: str,
        examples: ExampleBatch,
        deadline: float | None = None,
    ) -> InferenceResult:
        """Regress ``examples`` (``deadline``: ``time.monotonic()`` seconds, None = none)."""
        return await self._single(ref, signature_name, REGRESS_METHOD, examples, deadline)

    async def multi_inference(
        self,
        tasks: Sequence[InferenceTask],
        examples: ExampleBatch,
        deadline: float | None = None,
    ) -> list[InferenceResult]:
        """Run every task on the same examples; results in task order (owned copies: a task's
        rows are not held while another task's run is awaited)."""
        if not tasks:
            raise InvalidArgument("MultiInferenceRequest has no tasks")
        servable = self._core.servable(tasks[0].ref)
        plans = multi_inference_plans(servable, tasks, method_name_check=self._method_name_check)
        if examples.count == 0:
            raise InvalidArgument("Input is empty.")
        runs = await asyncio.gather(
            *(self._run(servable, plan, examples, deadline, own=True) for plan in plans)
        )
        return [
            InferenceResult(servable.model, servable.version, plan.signature.name, *run)
            for plan, run in zip(plans, runs, strict=True)
        ]

    async def _single(
        self,
        ref: ModelRef,
        signature_name: str,
        method_name: str,
        examples: ExampleBatch,
        deadline: float | None,
    ) -> InferenceResult:
        servable = self._core.servable(ref)
        plan = single_plan(
            servable, signature_name, method_name, method_name_check=self._method_name_check
        )
        if examples.count == 0:
            raise InvalidArgument("Input is empty.")
        result, outputs = await self._run(servable, plan, examples, deadline)
        return InferenceResult(
            servable.model, servable.version, plan.signature.name, result, outputs
        )

    async def _run(
        self,
        servable: Servable,
        plan: TaskPlan,
        examples: ExampleBatch,
        deadline: float | None,
        *,
        own: bool = False,
    ) -> tuple[Classifications | Regressions, Outputs]:
        """The task's checked results and the outputs (with their lease) they view; ``own``:
        copies, the lease returned at once."""
        inputs = plan.feed(examples)
        ref = ModelRef(servable.model, version=servable.version)
        result = await self._core.predict(
            ref,
            plan.signature.name,
            lambda _signature: inputs,
            plan.outputs,
            deadline,
            check_dtypes=plan.input_spec is None,
        )
        n, outputs = examples.count, result.outputs
        if own:
            outputs = Outputs({name: array.copy() for name, array in outputs.items()})
            result.release()
        try:
            if plan.method_name == CLASSIFY_METHOD:
                return classifications(n, outputs.get(CLASSES), outputs.get(SCORES)), outputs
            return regressions(n, outputs[OUTPUTS]), outputs
        except BaseException:
            outputs.release()
            raise
