"""Classification, Regression and MultiInference envelopes ⇄ the inference service's types."""

from __future__ import annotations

import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import inference_pb2
from gateway.errors import InvalidArgument
from gateway.serving.core import ModelRef
from gateway.tfserving.codec import inference_messages
from gateway.tfserving.inference import InferenceResult
from gateway.tfserving.inference_results import Classifications, Regressions


def test_multi_inference_tasks_share_the_parser() -> None:
    request = inference_pb2.MultiInferenceRequest()
    task = request.tasks.add(method_name="tensorflow/serving/regress")
    task.model_spec.name = "m"
    task.model_spec.version_label = "canary"
    request.tasks.add(method_name="tensorflow/serving/classify")  # no model_spec at all
    with pytest.raises(InvalidArgument, match=r"^Missing ModelSpec$"):
        inference_messages.tasks(request)
    del request.tasks[1]
    (parsed,) = inference_messages.tasks(request)
    assert parsed.ref == ModelRef("m", label="canary")
    assert parsed.method_name == "tensorflow/serving/regress"


def test_a_classification_carries_the_model_spec_and_each_example_s_classes() -> None:
    labels = np.array([[b"cat", b"\xff"], [b"dog", b"cow"]], object)
    scores = np.array([[0.75, 0.25], [0.5, 0.5]], np.float32)
    result = InferenceResult("m", 3, "serving_default", Classifications(labels, scores))
    response = inference_messages.classification_response(result)
    spec = response.model_spec
    assert (spec.name, spec.version.value, spec.signature_name) == ("m", 3, "serving_default")
    rows = [[(c.label, c.score) for c in row.classes] for row in response.result.classifications]
    assert rows == [[("cat", 0.75), ("\ufffd", 0.25)], [("dog", 0.5), ("cow", 0.5)]]
    scores_only = InferenceResult("m", 3, "s", Classifications(None, scores))
    response = inference_messages.classification_response(scores_only)
    assert [c.label for c in response.result.classifications[0].classes] == ["", ""]
    with pytest.raises(TypeError):
        inference_messages.regression_response(result)


def test_a_multi_inference_answers_each_task_in_order() -> None:
    regressions = InferenceResult("m", 1, "r", Regressions(np.array([1.5, -2.0], np.float32)))
    classes = InferenceResult("m", 1, "c", Classifications(None, np.ones((2, 1), np.float32)))
    response = inference_messages.multi_inference_response([regressions, classes])
    first, second = response.results
    assert [r.value for r in first.regression_result.regressions] == [1.5, -2.0]
    assert first.model_spec.signature_name == "r"
    assert len(second.classification_result.classifications) == 2


def test_examples_are_counted_as_tf_serving_counts_them() -> None:
    request = inference_pb2.MultiInferenceRequest()
    assert inference_messages.example_count(request) == 0
    request.input.example_list.examples.add()
    request.input.example_list.examples.add()
    assert inference_messages.example_count(request) == 2
