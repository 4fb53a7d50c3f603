"""TF Serving warmup files for tests: ``<version>/assets.extra/tf_serving_warmup_requests``, a
TFRecord of PredictionLog records, written with this project's protos (TensorFlow's own writer is
used by ``tf_compat_models_script.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from gateway._pb.tensorflow_serving.apis import prediction_log_pb2
from gateway.tfserving.codec import tensor_encode
from gateway.tfserving.codec.tfrecord import frame_record
from gateway.tfserving.warmup import WARMUP_FILE

PredictionLog = prediction_log_pb2.PredictionLog


def write_warmup(version_dir: Path, records: Iterable[PredictionLog | bytes]) -> Path:
    """Write ``records`` (PredictionLogs, or raw bytes framed as they are) as the version's
    warmup file; returns its path."""
    path = version_dir / WARMUP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        b"".join(
            frame_record(r if isinstance(r, bytes) else r.SerializeToString()) for r in records
        )
    )
    return path


def predict_log(
    inputs: Mapping[str, np.ndarray], *, signature: str = "", outputs: Iterable[str] = ()
) -> PredictionLog:
    """A ``predict_log`` record whose request feeds ``inputs`` to ``signature``."""
    log = PredictionLog()
    request = log.predict_log.request
    request.model_spec.name = "ignored by warmup"
    request.model_spec.signature_name = signature
    for name, array in inputs.items():
        request.inputs[name].CopyFrom(tensor_encode.from_ndarray(array))
    request.output_filter.extend(outputs)
    return log


def regress_log(features: Iterable[Mapping[str, float]], *, signature: str = "") -> PredictionLog:
    """A ``regress_log`` record of float features, one Example per mapping."""
    log = PredictionLog()
    request = log.regress_log.request
    request.model_spec.signature_name = signature
    for feature in features:
        example = request.input.example_list.examples.add()
        for name, value in feature.items():
            example.features.feature[name].float_list.value.append(value)
    return log
