"""Read request log files with the OFFICIAL tensorflow_serving protos and TensorFlow's own TFRecord
reader (which checks every record's CRCs), in a process of their own: TensorFlow's protos and
this project's must never share one.

Usage: ``python request_log_read_script.py OUT.json FILE...``. Writes one JSON object per record,
in file order: ``file``, ``kind`` (the ``log_type`` set), ``model``, ``version``, ``signature``,
``rate``, ``attributes``, ``timestamp``, and per kind: Predict's ``x`` (the request's input ``x``
as nested lists, via ``tf.make_ndarray``) and ``outputs`` (the response's output names);
Classify's ``classifications`` and Regress's ``regressions`` (result counts); MultiInference's
``results`` (result count).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2


def describe(path: str, data: bytes) -> dict[str, Any]:
    log = prediction_log_pb2.PredictionLog.FromString(data)
    meta = log.log_metadata
    kind = log.WhichOneof("log_type")
    out: dict[str, Any] = {
        "file": path,
        "kind": kind,
        "model": meta.model_spec.name,
        "version": meta.model_spec.version.value,
        "signature": meta.model_spec.signature_name,
        "rate": meta.sampling_config.sampling_rate,
        "attributes": meta.sampling_config.attributes,
        "timestamp": meta.timestamp_secs,
    }
    if kind == "predict_log":
        out["x"] = tf.make_ndarray(log.predict_log.request.inputs["x"]).tolist()
        out["outputs"] = sorted(log.predict_log.response.outputs)
    elif kind == "classify_log":
        out["classifications"] = len(log.classify_log.response.result.classifications)
    elif kind == "regress_log":
        out["regressions"] = len(log.regress_log.response.result.regressions)
    elif kind == "multi_inference_log":
        out["results"] = len(log.multi_inference_log.response.results)
    return out


def main(out_path: str, paths: list[str]) -> None:
    records = [
        describe(path, bytes(data))
        for path in paths
        for data in tf.compat.v1.io.tf_record_iterator(path)
    ]
    with open(out_path, "w") as out:
        json.dump(records, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
