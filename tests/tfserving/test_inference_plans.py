"""Which signature serves a Classify, Regress or MultiInference task, and how it is fed: TF
Serving's checks before a run (error texts included), in process."""

from __future__ import annotations

import numpy as np
import pytest

from gateway._pb.tensorflow.core.example import example_pb2
from gateway._pb.tensorflow_serving.apis import input_pb2
from gateway.errors import InvalidArgument, ServingError, Unimplemented
from gateway.serving.core import ModelRef
from gateway.serving.registry import Servable
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.codec.example import ExampleBatch
from gateway.tfserving.inference_plans import (
    CLASSIFY_METHOD,
    REGRESS_METHOD,
    InferenceTask,
    multi_inference_plans,
    plan_task,
    single_plan,
)

EXAMPLES = TensorSpec("inputs", "string", (-1,))
SCORES = TensorSpec("scores", "float32", (-1, 2))
OUTPUTS = TensorSpec("outputs", "float32", (-1,))


def _tf(**signatures: Signature) -> Servable:
    return Servable("m", 1, "m:1", "tensorflow", dict(signatures))


def _classify(name: str = "c", *outputs: TensorSpec) -> Signature:
    return Signature(name, (EXAMPLES,), outputs or (SCORES,), method_name=CLASSIFY_METHOD)


def _regress(name: str = "r") -> Signature:
    return Signature(name, (EXAMPLES,), (OUTPUTS,), method_name=REGRESS_METHOD)


def _message(call: object, *args: object, **kw: object) -> str:
    with pytest.raises(ServingError) as info:
        call(*args, **kw)  # type: ignore[operator]
    return info.value.message


def _examples(*xs: float) -> ExampleBatch:
    request = input_pb2.Input()
    for x in xs:
        example = example_pb2.Example()
        example.features.feature["x"].float_list.value.append(x)
        request.example_list.examples.append(example)
    return ExampleBatch(request)


def test_a_tensorflow_signature_is_fed_the_serialized_examples() -> None:
    plan = single_plan(_tf(c=_classify()), "c", CLASSIFY_METHOD, method_name_check=True)
    assert plan.outputs == ("scores",) and plan.input_spec == EXAMPLES
    fed = plan.feed(_examples(1.0, 2.0))
    assert list(fed) == ["inputs"] and fed["inputs"].shape == (2,)


def test_an_onnx_signature_is_fed_the_parsed_features() -> None:
    x = TensorSpec("x", "float32", (-1, 1))
    onnx = Servable(
        "m", 1, "m:1", "onnx", {"serving_default": Signature("serving_default", (x,), (OUTPUTS,))}
    )
    plan = single_plan(onnx, "", REGRESS_METHOD, method_name_check=False)
    assert plan.input_spec is None and plan.outputs == ("outputs",)
    np.testing.assert_array_equal(plan.feed(_examples(1.5))["x"], [[1.5]])
    message = _message(single_plan, onnx, "", CLASSIFY_METHOD, method_name_check=False)
    assert message.startswith(
        "Expected classification signature outputs to contain at least one of "
        '"classes" or "scores".'
    )


def test_tf_serving_s_checks_before_a_run() -> None:
    servable = _tf(
        c=_classify(),
        r=_regress(),
        two_inputs=Signature("two_inputs", (EXAMPLES, EXAMPLES), (OUTPUTS,)),
        renamed=Signature("renamed", (TensorSpec("x", "string", (-1,)),), (OUTPUTS,)),
    )
    assert _message(single_plan, servable, "nope", REGRESS_METHOD, method_name_check=False) == (
        "No signature was found with the name: nope"
    )
    assert _message(single_plan, servable, "c", REGRESS_METHOD, method_name_check=True) == (
        f"Expected regression signature method_name to be {REGRESS_METHOD}. Was: {CLASSIFY_METHOD}"
    )
    assert _message(
        single_plan, servable, "two_inputs", REGRESS_METHOD, method_name_check=False
    ) == ("Expected one input Tensor.")
    assert _message(
        single_plan, servable, "renamed", REGRESS_METHOD, method_name_check=False
    ).startswith("No regression inputs found in SignatureDef: inputs {x: string[-1]}")
    # Off by default: a TF2 signature recorded with the predict method can classify.
    predict_made = Signature("p", (EXAMPLES,), (SCORES,))
    assert plan_task(_tf(p=predict_made), predict_made, CLASSIFY_METHOD, method_name_check=False)


def test_multi_inference_tasks_name_one_model_and_distinct_signatures() -> None:
    servable = _tf(c=_classify(), r=_regress())

    def task(signature: str, method: str = REGRESS_METHOD, model: str = "m") -> InferenceTask:
        return InferenceTask(ModelRef(model), signature, method)

    plans = multi_inference_plans(
        servable, [task("c", CLASSIFY_METHOD), task("r")], method_name_check=True
    )
    assert [p.signature.name for p in plans] == ["c", "r"]
    cases: list[tuple[list[InferenceTask], type[ServingError], str]] = [
        ([task("r", model="")], InvalidArgument, "Found ModelSpec with an empty model name."),
        (
            [task("c", CLASSIFY_METHOD), task("r", model="other")],
            InvalidArgument,
            "All ModelSpecs in a MultiInferenceRequest must access the same model name.",
        ),
        ([task("r"), task("r")], InvalidArgument, "Duplicate evaluation of signature: r"),
        ([task("x")], InvalidArgument, "Requested signature not found in model graph: x"),
        ([task("r", "tensorflow/serving/predict")], Unimplemented, "Unsupported signature"),
    ]
    for tasks, kind, message in cases:
        with pytest.raises(kind) as info:
            multi_inference_plans(servable, tasks, method_name_check=False)
        assert info.value.message.startswith(message)


def test_multi_inference_inputs_must_take_the_examples_alike() -> None:
    other = Signature("o", (TensorSpec("inputs", "float32", (-1,)),), (OUTPUTS,))
    servable = _tf(r=_regress(), o=other)
    tasks = [InferenceTask(ModelRef("m"), name, REGRESS_METHOD) for name in ("r", "o")]
    assert _message(multi_inference_plans, servable, tasks, method_name_check=False) == (
        "Input tensor must be the same for all Signatures."
    )
