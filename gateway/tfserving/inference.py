"""Classify, Regress and MultiInference: tf.Example requests on top of the serving core.

Transport-agnostic, like :mod:`gateway.serving.core`: the gRPC and REST adapters hand over a
:class:`~gateway.tfserving.codec.example.ExampleBatch` and get plain results back. Each task runs
as a Predict through :meth:`ServingCore.predict` (so it is validated and batched like one), on the
plan :mod:`~gateway.tfserving.inference_plans` makes (TF Serving's checks before a run), and its
outputs are checked by :mod:`~gateway.tfserving.inference_results` (TF Serving's checks after).

MultiInference: the first task's version or label picks the servable; tasks run concurrently; the
first failure fails the call.

Classify and Regress results view a worker's output space: like the core's predict, they take the
protocol's encoder and return what it makes, while the space is held. MultiInference results are
owned copies (a task's rows are not held while another task's run is awaited).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from gateway.errors import InvalidArgument
from gateway.serving.core import ModelRef, PredictResult, ServingCore
from gateway.serving.inputs import converted_inputs
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
    ``signature_name`` is as requested, ``serving_default`` when the request left it empty."""

    model: str
    version: int
    signature_name: str
    result: Classifications | Regressions


R = TypeVar("R")
InferenceEncoder = Callable[[InferenceResult], R]
"""Turns a Classify / Regress result into the protocol's answer, synchronously (it may view the
worker's output space, held while it runs)."""


class ExampleInference:
    """Classify, Regress and MultiInference over a :class:`ServingCore` (see the module doc)."""

    def __init__(self, core: ServingCore, *, method_name_check: bool = False) -> None:
        self._core = core
        self._method_name_check = method_name_check

    async def classify(
        self,
        ref: ModelRef,
        signature_name: str,
        examples: ExampleBatch,
        encode: InferenceEncoder[R],
        deadline: float | None = None,
    ) -> R:
        """Classify ``examples``; ``encode`` of the result (``deadline``: ``time.monotonic()``
        seconds, None = none)."""
        return await self._single(ref, signature_name, CLASSIFY_METHOD, examples, encode, deadline)

    async def regress(
        self,
        ref: ModelRef,
        signature_name: str,
        examples: ExampleBatch,
        encode: InferenceEncoder[R],
        deadline: float | None = None,
    ) -> R:
        """Regress ``examples``; ``encode`` of the result (``deadline``: ``time.monotonic()``
        seconds, None = none)."""
        return await self._single(ref, signature_name, REGRESS_METHOD, examples, encode, deadline)

    async def multi_inference(
        self,
        tasks: Sequence[InferenceTask],
        examples: ExampleBatch,
        deadline: float | None = None,
    ) -> list[InferenceResult]:
        """Run every task on the same examples; results in task order, owned copies."""
        if not tasks:
            raise InvalidArgument("MultiInferenceRequest has no tasks")
        servable = self._core.servable(tasks[0].ref)
        plans = multi_inference_plans(servable, tasks, method_name_check=self._method_name_check)
        if examples.count == 0:
            raise InvalidArgument("Input is empty.")
        runs = (self._run(servable, plan, examples, _as_is, deadline, copy=True) for plan in plans)
        return list(await asyncio.gather(*runs))

    async def _single(
        self,
        ref: ModelRef,
        signature_name: str,
        method_name: str,
        examples: ExampleBatch,
        encode: InferenceEncoder[R],
        deadline: float | None,
    ) -> R:
        servable = self._core.servable(ref)
        plan = single_plan(
            servable, signature_name, method_name, method_name_check=self._method_name_check
        )
        if examples.count == 0:
            raise InvalidArgument("Input is empty.")
        return await self._run(servable, plan, examples, encode, deadline)

    async def _run(
        self,
        servable: Servable,
        plan: TaskPlan,
        examples: ExampleBatch,
        encode: InferenceEncoder[R],
        deadline: float | None,
        *,
        copy: bool = False,
    ) -> R:
        """Run the task's plan as one Predict; ``encode`` of its checked result (from copies of
        the outputs with ``copy``)."""
        n = examples.count

        def checked(result: PredictResult) -> R:
            outputs = result.outputs
            if copy:
                outputs = {name: array.copy() for name, array in outputs.items()}
            task = InferenceResult(
                servable.model, servable.version, plan.signature.name, _results(plan, n, outputs)
            )
            return encode(task)

        ref = ModelRef(servable.model, version=servable.version)
        return await self._core.predict(
            ref,
            plan.signature.name,
            lambda _signature: converted_inputs(plan.feed(examples)),
            checked,
            plan.outputs,
            deadline,
            check_dtypes=plan.input_spec is None,
        )


def _as_is(result: InferenceResult) -> InferenceResult:
    return result


def _results(
    plan: TaskPlan, n: int, outputs: Mapping[str, np.ndarray]
) -> Classifications | Regressions:
    """TF Serving's checks on a task's outputs (:mod:`~gateway.tfserving.inference_results`)."""
    if plan.method_name == CLASSIFY_METHOD:
        return classifications(n, outputs.get(CLASSES), outputs.get(SCORES))
    return regressions(n, outputs[OUTPUTS])
