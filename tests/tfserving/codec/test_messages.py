"""Serving API envelopes ⇄ core types, in process."""

from __future__ import annotations

import pytest

from gateway._pb.tensorflow_serving.apis import inference_pb2, predict_pb2
from gateway.errors import InvalidArgument
from gateway.serving.core import ModelRef
from gateway.tfserving.codec import messages


def test_model_ref_reads_the_version_choice() -> None:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "m"
    assert messages.model_ref(request) == ModelRef("m")
    request.model_spec.version.value = 3
    assert messages.model_ref(request) == ModelRef("m", version=3)
    request.model_spec.version_label = "stable"  # the oneof: the label replaces the version
    assert messages.model_ref(request) == ModelRef("m", label="stable")


def test_a_request_without_model_spec_is_refused_as_tf_serving_does() -> None:
    with pytest.raises(InvalidArgument, match=r"^Missing ModelSpec$"):
        messages.model_ref(predict_pb2.PredictRequest())


def test_multi_inference_tasks_share_the_parser() -> None:
    request = inference_pb2.MultiInferenceRequest()
    task = request.tasks.add(method_name="tensorflow/serving/regress")
    task.model_spec.name = "m"
    task.model_spec.version_label = "canary"
    request.tasks.add(method_name="tensorflow/serving/classify")  # no model_spec at all
    with pytest.raises(InvalidArgument, match=r"^Missing ModelSpec$"):
        messages.tasks(request)
    del request.tasks[1]
    (parsed,) = messages.tasks(request)
    assert parsed.ref == ModelRef("m", label="canary")
    assert parsed.method_name == "tensorflow/serving/regress"
