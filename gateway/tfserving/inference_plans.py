"""Which signature serves a Classify, Regress or MultiInference task, and how it is fed: TF
Serving's checks before a run (``servables/tensorflow/classifier.cc``, ``regressor.cc``,
``multi_inference.cc``: their ``PreProcess*`` checks, error texts included).

- TensorFlow signatures: classify takes exactly one input, aliased ``inputs``, fed the serialized
  Examples, and one or two outputs among ``classes`` and ``scores``; regress one input ``inputs``
  and one output ``outputs``.
- ONNX signatures: the Examples are parsed into the graph's inputs of the same names; classify
  reads ``classes`` and/or ``scores``, regress ``outputs``.
- The signature's ``method_name`` is checked only when ``method_name_check`` is on (TF Serving's
  ``--enable_signature_method_name_check``, off by default so that TF2 signatures, which
  ``tf.saved_model.save`` records with the predict method name, can classify and regress).
- MultiInference: every task names the same model and a distinct signature, and their inputs take
  the serialized Examples alike (same dtype and shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from gateway.errors import InvalidArgument, Unimplemented
from gateway.serving.core import ModelRef
from gateway.serving.registry import Servable
from gateway.serving.signature import DEFAULT_SIGNATURE, Signature, TensorSpec
from gateway.tfserving.codec.example import ExampleBatch
from gateway.tfserving.inference_results import CLASSES, SCORES

CLASSIFY_METHOD: Final = "tensorflow/serving/classify"
REGRESS_METHOD: Final = "tensorflow/serving/regress"
INPUTS: Final = "inputs"
OUTPUTS: Final = "outputs"


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
    spec: TensorSpec | None = (
        None  # not TensorFlow: the Examples are parsed into the graph's inputs
    )
    if servable.platform == "tensorflow":  # the serialized Examples feed the one input
        if len(signature.inputs) != 1:
            raise InvalidArgument("Expected one input Tensor.")
        if classify and len(names) not in (1, 2):
            raise InvalidArgument(f"Expected one or two output Tensors, found {len(names)}")
        if not classify and len(names) != 1:
            raise InvalidArgument("Expected one output Tensor.")
        (spec,) = signature.inputs
        if spec.name != INPUTS:
            kind = "classification" if classify else "regression"
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
