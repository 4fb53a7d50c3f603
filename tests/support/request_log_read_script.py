"""Read request log files with the OFFICIAL tensorflow_serving protos and TensorFlow's own TFRecord
reader (which checks every record's CRCs), in a process of their own: TensorFlow's protos and
this project's must never share one.

Usage: ``python request_log_read_script.py OUT.json FILE...``. Writes one JSON object per record,
in file order: ``file``, ``kind`` (the ``log_type`` set), ``model``, ``version``, ``signature``,
``rate``, ``attributes``, ``timestamp``, and per kind: Predict's ``x`` (the request's input ``x``
as nested lists, via ``tf.make_ndarray``), ``outputs`` (the response's output names),
``request_version`` (the request's ``model_spec.version``, 0 when unset), and ``tensors``: every
input and output as ``{"dtype", "values"}`` (the numpy dtype's name, nested lists; strings
decoded as UTF-8), under ``"request"`` and ``"response"``;
Classify's ``classifications`` and Regress's ``regressions`` (result counts); MultiInference's
``results`` (result count).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2


def tensors(protos: Any) -> dict[str, Any]:
    """Each TensorProto of a map as ``{"dtype", "values"}``."""
    out = {}
    for name, proto in protos.items():
        array = tf.make_ndarray(proto)
        values = array.tolist()
        if array.dtype == object:
            values = [v.decode() for v in array.ravel().tolist()]
            values = np.array(values, dtype=object).reshape(array.shape).tolist()
        out[name] = {"dtype": str(array.dtype), "values": values}
    return out


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
        request = tensors(log.predict_log.request.inputs)
        out["x"] = request["x"]["values"]
        out["outputs"] = sorted(log.predict_log.response.outputs)
        out["request_version"] = log.predict_log.request.model_spec.version.value
        out["tensors"] = {"request": request, "response": tensors(log.predict_log.response.outputs)}
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
