"""Classification, Regression and MultiInference envelopes ⇄ the inference service's types.

tf.Examples themselves go through :mod:`gateway.tfserving.codec.example`. Classify, Regress and
MultiInference responses carry TF Serving's ModelSpec: the request's model name, its signature
name (``serving_default`` when it was empty) and the version that served it. Labels are proto3
``string`` fields: a label that is not UTF-8 is decoded with replacement characters.
"""

from __future__ import annotations

from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    inference_pb2,
    input_pb2,
    regression_pb2,
)
from gateway.tfserving.codec.example import ExampleBatch
from gateway.tfserving.codec.service_messages import fill_model_spec, model_ref
from gateway.tfserving.inference import InferenceResult
from gateway.tfserving.inference_plans import InferenceTask
from gateway.tfserving.inference_results import Classifications, Regressions


def example_count(request: inference_pb2.MultiInferenceRequest) -> int:
    """Examples in a MultiInference request's input (TF Serving's ``NumInputExamples``)."""
    kind = request.input.WhichOneof("kind")
    if kind == "example_list":
        return len(request.input.example_list.examples)
    if kind == "example_list_with_context":
        return len(request.input.example_list_with_context.examples)
    return 0


def examples(proto: input_pb2.Input) -> ExampleBatch:
    return ExampleBatch(proto)


def tasks(request: inference_pb2.MultiInferenceRequest) -> list[InferenceTask]:
    """The tasks of a MultiInferenceRequest (model names are checked by the service)."""
    return [
        InferenceTask(model_ref(task), task.model_spec.signature_name, task.method_name)
        for task in request.tasks
    ]


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
