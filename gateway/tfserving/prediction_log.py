"""TF Serving's calls as request log records (TF Serving's ``logging_config``): each logged call
is one ``tensorflow.serving.PredictionLog``, framed as a TFRecord record
(:mod:`~gateway.tfserving.codec.tfrecord`), exactly as TF Serving's own log collectors receive
it — so a log file is also a valid ``assets.extra/tf_serving_warmup_requests``.

Per method: Predict → ``predict_log``, Classify → ``classify_log``, Regress → ``regress_log``,
MultiInference → ``multi_inference_log``, each with the request and the response as answered.
``log_metadata``: ``model_spec`` as the response names it (the version served and the signature;
for MultiInference, the first task's), ``sampling_config`` (the model's ``sampling_rate`` and
``attributes``) and ``timestamp_secs`` (when the call was answered). ``saved_model_tags``, ``dc``
and the request origin and criticality stay empty. Records are made in the request log's writer
thread (:mod:`gateway.observability.request_log`), never on the event loop; on the loop only the
bytes a queued call holds are estimated, from its fields' lengths (no serialization).

REST calls are logged as their gRPC twin, as TF Serving logs them (it turns the JSON into the
gRPC request first): a predict (and a V2 infer, :func:`tensors`) as a Predict whose request names
the model, the version or label of the URL, the body's ``signature_name`` and the output filter,
with the decoded inputs as TensorProtos in typed fields (strings in ``string_val``), and whose
response holds the outputs answered, in typed fields, with the version served and the signature;
``:classify`` / ``:regress`` (:func:`rest_examples`) as a Classify / Regress whose request holds
the body's examples as ``tf.Example`` protos.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.message import Message

from gateway._pb.tensorflow.core.example import feature_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    inference_pb2,
    input_pb2,
    logging_pb2,
    model_pb2,
    predict_pb2,
    prediction_log_pb2,
    regression_pb2,
)
from gateway.observability.request_log import TensorRequest
from gateway.serving.core import ModelRef, PredictResult
from gateway.tfserving.codec import inference_messages, tfrecord
from gateway.tfserving.codec.service_messages import fill_model_spec
from gateway.tfserving.codec.tensor_encode import from_ndarray
from gateway.tfserving.inference import InferenceResult
from gateway.tfserving.inference_results import Classifications, Regressions
from gateway.transport.surface import LogAs, LogRecord, Sampled

PredictionLog = prediction_log_pb2.PredictionLog


def _fill(target: Message, value: Any) -> None:
    """``target`` becomes ``value``: a message, or its encoding (Predict answers bytes)."""
    if isinstance(value, bytes | bytearray | memoryview):
        target.ParseFromString(bytes(value))
    else:
        target.CopyFrom(value)


def _framed(
    log: prediction_log_pb2.PredictionLog, spec: model_pb2.ModelSpec, sampled: Sampled
) -> bytes:
    metadata: logging_pb2.LogMetadata = log.log_metadata
    metadata.model_spec.CopyFrom(spec)
    metadata.sampling_config.sampling_rate = sampled.sampling_rate
    metadata.sampling_config.attributes = sampled.attributes
    metadata.timestamp_secs = sampled.timestamp_secs
    return tfrecord.frame_record(log.SerializeToString())


def predict_record(request: predict_pb2.PredictRequest, response: Any, sampled: Sampled) -> bytes:
    log = PredictionLog()
    log.predict_log.request.CopyFrom(request)
    _fill(log.predict_log.response, response)
    return _framed(log, log.predict_log.response.model_spec, sampled)


def classify_record(
    request: classification_pb2.ClassificationRequest, response: Any, sampled: Sampled
) -> bytes:
    log = PredictionLog()
    log.classify_log.request.CopyFrom(request)
    _fill(log.classify_log.response, response)
    return _framed(log, log.classify_log.response.model_spec, sampled)


def regress_record(
    request: regression_pb2.RegressionRequest, response: Any, sampled: Sampled
) -> bytes:
    log = PredictionLog()
    log.regress_log.request.CopyFrom(request)
    _fill(log.regress_log.response, response)
    return _framed(log, log.regress_log.response.model_spec, sampled)


def multi_inference_record(
    request: inference_pb2.MultiInferenceRequest, response: Any, sampled: Sampled
) -> bytes:
    log = PredictionLog()
    log.multi_inference_log.request.CopyFrom(request)
    _fill(log.multi_inference_log.response, response)
    results = log.multi_inference_log.response.results
    spec = results[0].model_spec if results else request.tasks[0].model_spec
    return _framed(log, spec, sampled)


# -- what a queued call holds (estimated on the loop) ---------------------------------------------
ITEM_BYTES = 16
"""What one string or one map entry costs besides its own bytes (an estimate)."""

WIDE_FIELDS = ("double_val", "int64_val", "dcomplex_val", "uint64_val")
"""TensorProto's typed fields of 8-byte values (the others hold 4 or fewer per value)."""
NARROW_FIELDS = ("float_val", "int_val", "half_val", "scomplex_val", "bool_val", "uint32_val")


def tensor_proto_nbytes(tensor: TensorProto) -> int:
    """About the bytes ``tensor``'s values take (its fields' lengths; nothing is serialized)."""
    total = len(tensor.tensor_content)
    for name in WIDE_FIELDS:
        total += 8 * len(getattr(tensor, name))
    for name in NARROW_FIELDS:
        total += 4 * len(getattr(tensor, name))
    strings = tensor.string_val
    if strings:
        total += sum(map(len, strings)) + ITEM_BYTES * len(strings)
    return total


def _encoded_or(response: Any, estimate: Any) -> int:
    if isinstance(response, bytes | bytearray | memoryview):
        return len(response)
    return int(estimate(response))


def predict_nbytes(request: predict_pb2.PredictRequest, response: Any) -> int:
    """A Predict's request tensors, and its response (wire bytes, or a message's tensors)."""
    asked = sum(tensor_proto_nbytes(t) for t in request.inputs.values())
    return asked + _encoded_or(
        response, lambda r: sum(tensor_proto_nbytes(t) for t in r.outputs.values())
    )


def _features_nbytes(features: feature_pb2.Features) -> int:
    total = 0
    for name, feature in features.feature.items():
        total += len(name) + ITEM_BYTES
        kind = feature.WhichOneof("kind")
        if kind == "bytes_list":
            values = feature.bytes_list.value
            total += sum(map(len, values)) + ITEM_BYTES * len(values)
        elif kind == "float_list":
            total += 4 * len(feature.float_list.value)
        elif kind == "int64_list":
            total += 8 * len(feature.int64_list.value)
    return total


def input_nbytes(proto: input_pb2.Input) -> int:
    """About the bytes an Input's examples (and context) take."""
    kind = proto.WhichOneof("kind")
    if kind == "example_list":
        return sum(_features_nbytes(e.features) for e in proto.example_list.examples)
    if kind == "example_list_with_context":
        listed = proto.example_list_with_context
        examples = sum(_features_nbytes(e.features) for e in listed.examples)
        return examples + _features_nbytes(listed.context.features)
    return 0


def _classifications_nbytes(result: classification_pb2.ClassificationResult) -> int:
    return sum(len(c.label) + ITEM_BYTES for item in result.classifications for c in item.classes)


def _regressions_nbytes(result: regression_pb2.RegressionResult) -> int:
    return ITEM_BYTES * len(result.regressions)


def classify_nbytes(request: classification_pb2.ClassificationRequest, response: Any) -> int:
    return input_nbytes(request.input) + _encoded_or(
        response, lambda r: _classifications_nbytes(r.result)
    )


def regress_nbytes(request: regression_pb2.RegressionRequest, response: Any) -> int:
    return input_nbytes(request.input) + _encoded_or(
        response, lambda r: _regressions_nbytes(r.result)
    )


def multi_inference_nbytes(request: inference_pb2.MultiInferenceRequest, response: Any) -> int:
    def results(answer: inference_pb2.MultiInferenceResponse) -> int:
        return sum(
            _classifications_nbytes(r.classification_result)
            + _regressions_nbytes(r.regression_result)
            for r in answer.results
        )

    return input_nbytes(request.input) + _encoded_or(response, results)


# -- REST calls as their gRPC twins -------------------------------------------------------------
def _fill_request_spec(spec: model_pb2.ModelSpec, ref: ModelRef, signature_name: str) -> None:
    spec.name = ref.name
    if ref.version is not None:
        spec.version.value = ref.version
    elif ref.label is not None:
        spec.version_label = ref.label
    if signature_name:
        spec.signature_name = signature_name


def as_predict(
    request: TensorRequest, response: PredictResult
) -> tuple[predict_pb2.PredictRequest, predict_pb2.PredictResponse]:
    """The Predict request and response a tensor call stands for (``response``'s outputs owned
    arrays)."""
    asked = predict_pb2.PredictRequest(output_filter=request.output_filter)
    _fill_request_spec(asked.model_spec, request.ref, request.signature_name)
    for name, array in request.inputs.items():
        asked.inputs[name].CopyFrom(from_ndarray(array))
    answer = predict_pb2.PredictResponse()
    fill_model_spec(answer.model_spec, response.model, response.version, response.signature_name)
    for name, array in response.outputs.items():
        answer.outputs[name].CopyFrom(from_ndarray(array))
    return asked, answer


def tensors(request: TensorRequest, response: PredictResult, sampled: Sampled) -> bytes:
    """One framed ``predict_log`` record of a tensor call over REST (a
    :data:`~gateway.transport.surface.LogRecord`)."""
    return predict_record(*as_predict(request, response), sampled)


@dataclass(frozen=True, slots=True)
class ExamplesRequest:
    """What a REST ``:classify`` / ``:regress`` asked: ``ref``, ``signature_name`` ("" for the
    default) and the body's examples as an ``Input``."""

    ref: ModelRef
    signature_name: str
    input: input_pb2.Input


def owned(result: InferenceResult) -> InferenceResult:
    """``result`` with copies of its arrays (they may view a worker's output space)."""
    found = result.result
    if isinstance(found, Classifications):
        labels = None if found.labels is None else np.array(found.labels, copy=True)
        scores = None if found.scores is None else np.array(found.scores, copy=True)
        copied: Classifications | Regressions = Classifications(labels, scores)
    else:
        copied = Regressions(np.array(found.values, copy=True))
    return InferenceResult(result.model, result.version, result.signature_name, copied)


def result_nbytes(result: InferenceResult) -> int:
    """About the bytes an owned :class:`InferenceResult` holds."""
    found = result.result
    arrays: Iterable[np.ndarray | None] = (
        (found.labels, found.scores) if isinstance(found, Classifications) else (found.values,)
    )
    return sum(
        ITEM_BYTES * a.size if a.dtype.kind == "O" else a.nbytes for a in arrays if a is not None
    )


def _rest_classify(request: ExamplesRequest, response: InferenceResult, sampled: Sampled) -> bytes:
    asked = classification_pb2.ClassificationRequest()
    _fill_request_spec(asked.model_spec, request.ref, request.signature_name)
    asked.input.CopyFrom(request.input)
    return classify_record(asked, inference_messages.classification_response(response), sampled)


def _rest_regress(request: ExamplesRequest, response: InferenceResult, sampled: Sampled) -> bytes:
    asked = regression_pb2.RegressionRequest()
    _fill_request_spec(asked.model_spec, request.ref, request.signature_name)
    asked.input.CopyFrom(request.input)
    return regress_record(asked, inference_messages.regression_response(response), sampled)


REST_EXAMPLES: dict[str, LogRecord] = {"classify": _rest_classify, "regress": _rest_regress}
"""A REST ``:classify`` / ``:regress`` (by its verb) → how it is logged (request: an
:class:`ExamplesRequest`; response: an :func:`owned` :class:`InferenceResult`)."""


LOG_AS: dict[str, LogAs] = {
    "Predict": LogAs(predict_record, predict_nbytes),
    "Classify": LogAs(classify_record, classify_nbytes),
    "Regress": LogAs(regress_record, regress_nbytes),
    "MultiInference": LogAs(multi_inference_record, multi_inference_nbytes),
}
"""PredictionService's method name → how its calls are logged."""
