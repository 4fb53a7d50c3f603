"""TF Serving's calls as request log records (TF Serving's ``logging_config``): each logged call
is one ``tensorflow.serving.PredictionLog``, framed as a TFRecord record
(:mod:`~gateway.tfserving.codec.tfrecord`), exactly as TF Serving's own log collectors receive
it — so a log file is also a valid ``assets.extra/tf_serving_warmup_requests``.

Per method: Predict → ``predict_log``, Classify → ``classify_log``, Regress → ``regress_log``,
MultiInference → ``multi_inference_log``, each with the request and the response as answered.
``log_metadata``: ``model_spec`` as the response names it (the version served and the signature;
for MultiInference, the first task's), ``sampling_config`` (the model's ``sampling_rate`` and
``attributes``) and ``timestamp_secs`` (when the call was answered). ``saved_model_tags``, ``dc``
and the request origin and criticality stay empty. Called in the request log's writer thread
(:mod:`gateway.observability.request_log`), never on the event loop.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    inference_pb2,
    logging_pb2,
    model_pb2,
    predict_pb2,
    prediction_log_pb2,
    regression_pb2,
)
from gateway.tfserving.codec import tfrecord
from gateway.transport.surface import LogAs, Sampled

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
    return tfrecord.frame(log.SerializeToString())


def predict(request: predict_pb2.PredictRequest, response: Any, sampled: Sampled) -> bytes:
    log = PredictionLog()
    log.predict_log.request.CopyFrom(request)
    _fill(log.predict_log.response, response)
    return _framed(log, log.predict_log.response.model_spec, sampled)


def classify(
    request: classification_pb2.ClassificationRequest, response: Any, sampled: Sampled
) -> bytes:
    log = PredictionLog()
    log.classify_log.request.CopyFrom(request)
    _fill(log.classify_log.response, response)
    return _framed(log, log.classify_log.response.model_spec, sampled)


def regress(request: regression_pb2.RegressionRequest, response: Any, sampled: Sampled) -> bytes:
    log = PredictionLog()
    log.regress_log.request.CopyFrom(request)
    _fill(log.regress_log.response, response)
    return _framed(log, log.regress_log.response.model_spec, sampled)


def multi_inference(
    request: inference_pb2.MultiInferenceRequest, response: Any, sampled: Sampled
) -> bytes:
    log = PredictionLog()
    log.multi_inference_log.request.CopyFrom(request)
    _fill(log.multi_inference_log.response, response)
    results = log.multi_inference_log.response.results
    spec = results[0].model_spec if results else request.tasks[0].model_spec
    return _framed(log, spec, sampled)


LOG_AS: dict[str, LogAs] = {
    "Predict": predict,
    "Classify": classify,
    "Regress": regress,
    "MultiInference": multi_inference,
}
"""PredictionService's method name → how its calls are logged."""
