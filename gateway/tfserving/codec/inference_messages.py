"""Classification / Regression / MultiInference messages ⇄ :mod:`gateway.tfserving.inference` types.

Responses carry TF Serving's ModelSpec: the request's model name, its signature name
(``serving_default`` when it was empty) and the version that served it. Labels are proto3
``string`` fields: a label that is not UTF-8 is decoded with replacement characters.
"""

from __future__ import annotations

from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    inference_pb2,
    input_pb2,
    model_pb2,
    regression_pb2,
)
from gateway.serving.core import ModelRef
from gateway.tfserving.codec.example import ExampleBatch
from gateway.tfserving.codec.messages import fill_model_spec
from gateway.tfserving.inference import Classifications, InferenceResult, InferenceTask, Regressions


def examples(proto: input_pb2.Input) -> ExampleBatch:
    return ExampleBatch(proto)


def tasks(request: inference_pb2.MultiInferenceRequest) -> list[InferenceTask]:
    """The tasks of a MultiInferenceRequest (model names are checked by the service)."""
    return [
        InferenceTask(_task_ref(task.model_spec), task.model_spec.signature_name, task.method_name)
        for task in request.tasks
    ]


def _task_ref(spec: model_pb2.ModelSpec) -> ModelRef:
    choice = spec.WhichOneof("version_choice")
    if choice == "version":
        return ModelRef(spec.name, version=spec.version.value)
    if choice == "version_label":
        return ModelRef(spec.name, label=spec.version_label)
    return ModelRef(spec.name)


def classification_response(
    result: InferenceResult,
) -> classification_pb2.ClassificationResponse:
    response = classification_pb2.ClassificationResponse()
    fill_model_spec(response.model_spec, result.model, result.version, result.signature_name)
    if not isinstance(result.result, Classifications):
        raise TypeError("a classification response needs Classifications")
    fill_classifications(response.result, result.result)
    return response


def regression_response(result: InferenceResult) -> regression_pb2.RegressionResponse:
    response = regression_pb2.RegressionResponse()
    fill_model_spec(response.model_spec, result.model, result.version, result.signature_name)
    if not isinstance(result.result, Regressions):
        raise TypeError("a regression response needs Regressions")
    fill_regressions(response.result, result.result)
    return response


def multi_inference_response(
    results: list[InferenceResult],
) -> inference_pb2.MultiInferenceResponse:
    response = inference_pb2.MultiInferenceResponse()
    for result in results:
        entry = response.results.add()
        fill_model_spec(entry.model_spec, result.model, result.version, result.signature_name)
        if isinstance(result.result, Classifications):
            fill_classifications(entry.classification_result, result.result)
        else:
            fill_regressions(entry.regression_result, result.result)
    return response


def fill_classifications(
    proto: classification_pb2.ClassificationResult, result: Classifications
) -> None:
    n, k = result.shape
    labels = None if result.labels is None else result.labels.tolist()
    scores = None if result.scores is None else result.scores.tolist()
    for i in range(n):
        classes = proto.classifications.add().classes
        for j in range(k):
            entry = classes.add()
            if labels is not None:
                entry.label = _text(labels[i][j])
            if scores is not None:
                entry.score = scores[i][j]


def _text(label: bytes | str) -> str:
    return label.decode("utf-8", "replace") if isinstance(label, bytes) else label


def fill_regressions(proto: regression_pb2.RegressionResult, result: Regressions) -> None:
    for value in result.values.tolist():
        proto.regressions.add(value=value)
