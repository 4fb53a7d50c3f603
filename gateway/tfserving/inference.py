"""Classify, Regress and MultiInference: tf.Example requests on top of the serving core.

Transport-agnostic, like :mod:`gateway.serving.core`: the gRPC and REST adapters hand over a
:class:`~gateway.tfserving.codec.example.ExampleBatch` and get plain results back. Each task runs
as a Predict through :meth:`ServingCore.predict` (so it is validated and batched like one).

TensorFlow signatures follow TF Serving (``servables/tensorflow/classifier.cc``,
``regressor.cc``, ``multi_inference.cc``), error texts included:

- classify: exactly one input, aliased ``inputs``, fed the serialized Examples; one or two
  outputs among ``classes`` (string ``[n, k]``) and ``scores`` (float ``[n, k]``).
- regress: exactly one input ``inputs`` and one output ``outputs``, float ``[n]`` or ``[n, 1]``.
- The signature's ``method_name`` is checked only when ``method_name_check`` is on (TF Serving's
  ``--enable_signature_method_name_check``, off by default so that TF2 signatures, which
  ``tf.saved_model.save`` records with the predict method name, can classify and regress).

ONNX models have one signature (``serving_default``) whose graph inputs are Example features of
the same names: the Examples are parsed into dense tensors (:meth:`ExampleBatch.dense_features`).
Classify reads its outputs ``classes`` and/or ``scores``, Regress its output ``outputs``; other
outputs are not computed. The result checks are the same as for TensorFlow.

MultiInference: every task names the same model (the first task's version or label picks the
servable) and a distinct signature; their inputs must take the serialized Examples alike (same
dtype and shape). Tasks run concurrently; the first failure fails the call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from gateway.errors import InvalidArgument, Unimplemented
from gateway.parallel.lease import Outputs
from gateway.serving.core import ModelRef, ServingCore
from gateway.serving.registry import Servable
from gateway.serving.signature import DEFAULT_SIGNATURE, Signature, TensorSpec
from gateway.tfserving.codec import tensor as tensor_codec
from gateway.tfserving.codec.example import ExampleBatch

CLASSIFY_METHOD: Final = "tensorflow/serving/classify"
REGRESS_METHOD: Final = "tensorflow/serving/regress"
INPUTS: Final = "inputs"
CLASSES: Final = "classes"
SCORES: Final = "scores"
OUTPUTS: Final = "outputs"


@dataclass(frozen=True)
class Classifications:
    """``k`` classes per example: ``labels`` bytes ``[n, k]`` and/or ``scores`` float32
    ``[n, k]`` (None when the model gives no such tensor)."""

    labels: npt.NDArray[np.object_] | None
    scores: npt.NDArray[np.float32] | None

    @property
    def shape(self) -> tuple[int, int]:
        """``(examples, classes per example)``."""
        array = self.labels if self.labels is not None else self.scores
        if array is None:
            return (0, 0)
        n, k = array.shape
        return (n, k)


@dataclass(frozen=True)
class Regressions:
    """One float32 value per example: ``values`` ``[n]``."""

    values: npt.NDArray[np.float32]


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


@dataclass(frozen=True)
class InferenceTask:
    """One MultiInference task: a model (``ref.name`` may be empty: refused), a signature name
    (empty: ``serving_default``) and ``tensorflow/serving/classify`` or ``.../regress``."""

    ref: ModelRef
    signature_name: str
    method_name: str


@dataclass(frozen=True)
class TaskPlan:
    """How to run one task: its signature, the outputs to fetch, and how to feed it."""

    signature: Signature
    method_name: str
    outputs: tuple[str, ...]
    input_spec: TensorSpec | None
    """The input fed the serialized Examples (TensorFlow); None: parse them into features."""

    def feed(self, examples: ExampleBatch) -> dict[str, np.ndarray]:
        """The signature inputs for ``examples``. The serialized Examples go to a TensorFlow
        signature's input whatever dtype it declares (TF Serving feeds them as DT_STRING: its
        own saved_model_half_plus_three declares DT_FLOAT there), so their dtype is not
        checked against the signature."""
        if self.input_spec is None:
            return examples.dense_features(self.signature.inputs)
        return {self.input_spec.name: examples.serialized()}


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


def plan_task(
    servable: Servable, signature: Signature, method_name: str, *, method_name_check: bool
) -> TaskPlan:
    """Check ``signature`` can serve ``method_name`` (TF Serving's PreProcess* checks)."""
    classify = method_name == CLASSIFY_METHOD
    if method_name_check and signature.method_name != method_name:
        kind = "classification" if classify else "regression"
        raise InvalidArgument(
            f"Expected {kind} signature method_name to be {method_name}. "
            f"Was: {signature.method_name}"
        )
    names = signature.output_names()
    outputs = tuple(n for n in (CLASSES, SCORES) if n in names) if classify else (OUTPUTS,)
    if servable.platform != "tensorflow":  # parse Examples into the graph's inputs
        if classify and not outputs:
            raise InvalidArgument(_no_classify_outputs(signature))
        if not classify and OUTPUTS not in names:
            raise InvalidArgument(
                f"No regression outputs found in SignatureDef: {_describe(signature)}"
            )
        return TaskPlan(signature, method_name, outputs, None)
    kind = "classification" if classify else "regression"
    if len(signature.inputs) != 1:
        raise InvalidArgument("Expected one input Tensor.")
    if classify and len(names) not in (1, 2):
        raise InvalidArgument(f"Expected one or two output Tensors, found {len(names)}")
    if not classify and len(names) != 1:
        raise InvalidArgument("Expected one output Tensor.")
    (spec,) = signature.inputs
    if spec.name != INPUTS:
        raise InvalidArgument(f"No {kind} inputs found in SignatureDef: {_describe(signature)}")
    if classify and not outputs:
        raise InvalidArgument(_no_classify_outputs(signature))
    if not classify and OUTPUTS not in names:
        raise InvalidArgument(
            f"No regression outputs found in SignatureDef: {_describe(signature)}"
        )
    return TaskPlan(signature, method_name, outputs, spec)


def single_plan(
    servable: Servable, signature_name: str, method_name: str, *, method_name_check: bool
) -> TaskPlan:
    """Classify's or Regress's plan on ``signature_name`` (empty: ``serving_default``)."""
    name = signature_name or DEFAULT_SIGNATURE
    signature = servable.signatures.get(name)
    if signature is None:
        raise InvalidArgument(f"No signature was found with the name: {name}")
    return plan_task(servable, signature, method_name, method_name_check=method_name_check)


def multi_inference_plans(
    servable: Servable, tasks: Sequence[InferenceTask], *, method_name_check: bool
) -> list[TaskPlan]:
    """Check MultiInference's tasks (TF Serving's texts: one model name for all, each signature
    once) and plan each on ``servable``."""
    seen: set[str] = set()
    plans: list[TaskPlan] = []
    for task in tasks:
        if not task.ref.name:
            raise InvalidArgument("Found ModelSpec with an empty model name.")
        if task.ref.name != tasks[0].ref.name:  # the first task's (warmup records name
            # their model as they like; online, the servable was resolved from that task)
            raise InvalidArgument(
                "All ModelSpecs in a MultiInferenceRequest must access the same model name."
            )
        name = task.signature_name or DEFAULT_SIGNATURE
        if name in seen:
            raise InvalidArgument(f"Duplicate evaluation of signature: {name}")
        seen.add(name)
        signature = servable.signatures.get(name)
        if signature is None:
            raise InvalidArgument(f"Requested signature not found in model graph: {name}")
        if task.method_name not in (CLASSIFY_METHOD, REGRESS_METHOD):
            raise Unimplemented(f"Unsupported signature method_name: {task.method_name}")
        plan = plan_task(servable, signature, task.method_name, method_name_check=method_name_check)
        if plans and _fed_as(plan) != _fed_as(plans[0]):
            raise InvalidArgument("Input tensor must be the same for all Signatures.")
        plans.append(plan)
    return plans


def classifications(
    n: int, classes: np.ndarray | None, scores: np.ndarray | None
) -> Classifications:
    """Check a classification's output tensors for ``n`` examples (TF Serving's
    PostProcessClassificationResult) and return them; InvalidArgument says what is wrong."""
    for name, array, dtype in ((CLASSES, classes, "string"), (SCORES, scores, "float32")):
        if array is None:
            continue
        if array.ndim != 2:
            raise InvalidArgument(
                "Expected Tensor shape: [batch_size num_classes] but got " + _shape(array)
            )
        if _dtype(array) != dtype:
            raise InvalidArgument(
                f"Expected {name} Tensor of {_dt(dtype)}. Got: {_dt(_dtype(array))}"
            )
        if array.shape[0] != n:
            raise InvalidArgument(
                f"Expected {name} output batch size of {n}. Got: {array.shape[0]}"
            )
    if classes is not None and scores is not None and classes.shape[1] != scores.shape[1]:
        raise InvalidArgument(
            "Tensors class and score should match in dim_size(1). "
            f"Got {classes.shape[1]} vs. {scores.shape[1]}"
        )
    return Classifications(classes, scores)


def regressions(n: int, outputs: np.ndarray) -> Regressions:
    """Check a regression's output tensor for ``n`` examples (TF Serving's
    PostProcessRegressionResult) and return it as ``[n]``; InvalidArgument says what is wrong."""
    if not (outputs.ndim == 1 or (outputs.ndim == 2 and outputs.shape[1] == 1)):
        raise InvalidArgument(
            "Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got "
            + _shape(outputs)
        )
    if outputs.shape[0] != n:
        raise InvalidArgument(
            f"Input batch size did not match output batch size: {n} vs. {outputs.shape[0]}"
        )
    if _dtype(outputs) != "float32":
        raise InvalidArgument(f"Expected output Tensor of DT_FLOAT.  Got: {_dt(_dtype(outputs))}")
    return Regressions(outputs.reshape(n))


def _fed_as(plan: TaskPlan) -> tuple[str, tuple[int, ...] | None] | None:
    """What a task's input takes: tasks run together when they agree. TF2 signatures each have
    their own placeholder for the same serialized Examples, so graph tensor names may differ
    (TF Serving feeds the one input to every placeholder); dtype and shape may not."""
    spec = plan.input_spec
    return None if spec is None else (spec.dtype, spec.shape)


def _no_classify_outputs(signature: Signature) -> str:
    return (
        f'Expected classification signature outputs to contain at least one of "{CLASSES}" '
        f'or "{SCORES}". Signature was: {_describe(signature)}'
    )


def _describe(signature: Signature) -> str:
    """A signature in a SignatureDef-like text (TF Serving prints the proto here)."""

    def tensors(specs: Sequence[TensorSpec]) -> str:
        shown = ", ".join(
            f"{s.name}: {s.dtype}" + ("[?]" if s.shape is None else str(list(s.shape)))
            for s in specs
        )
        return "{" + shown + "}"

    return (
        f"inputs {tensors(signature.inputs)} outputs {tensors(signature.outputs)} "
        f'method_name: "{signature.method_name}"'
    )


def _shape(array: np.ndarray) -> str:
    return "[" + ",".join(str(d) for d in array.shape) + "]"


def _dtype(array: np.ndarray) -> str:
    return "string" if array.dtype.kind in "OSU" else str(array.dtype)


def _dt(name: str) -> str:
    """TensorFlow's DataType name for a canonical dtype name (``float32`` → ``DT_FLOAT``)."""
    return tensor_codec.data_type_name(name)
