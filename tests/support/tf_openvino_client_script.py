"""The OFFICIAL TF Serving client against a SavedModel served by OpenVINO, and TensorFlow itself
as the reference, in a process of their own. Usage:
``python tf_openvino_client_script.py TARGET MODEL_NAME SAVED_MODEL_DIR OUTPUT_DIR``.

Feeds ``x`` = [[1], [2.5], [-4]] (float32) to the model's ``serving_default`` through the gateway
(Predict, ``tf.make_tensor_proto`` / ``tf.make_ndarray``) and to the same SavedModel loaded with
``tf.saved_model.load``; writes ``served.npz`` and ``reference.npz`` (outputs by alias) and
``result.json``: the signature as GetModelMetadata gives it (``metadata``) and as TensorFlow reads
it from the SavedModel (``signature``), each ``{"inputs"|"outputs": {alias: [dtype, shape]}}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import get_model_metadata_pb2, predict_pb2, prediction_service_pb2_grpc


def _shape(shape: Any) -> list[int] | None:
    return None if shape.rank is None else [-1 if d is None else int(d) for d in shape]


def main(target: str, model: str, saved_model: str, out_dir: str) -> None:
    out = Path(out_dir)
    x = np.array([[1.0], [2.5], [-4.0]], np.float32)
    function = tf.saved_model.load(saved_model).signatures["serving_default"]
    (input_alias,) = function.structured_input_signature[1]
    np.savez(
        out / "reference.npz", **{k: v.numpy() for k, v in function(**{input_alias: x}).items()}
    )
    specs = {
        "inputs": function.structured_input_signature[1],
        "outputs": function.structured_outputs,
    }
    signature = {
        side: {k: [v.dtype.name, _shape(v.shape)] for k, v in tensors.items()}
        for side, tensors in specs.items()
    }
    with grpc.insecure_channel(target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = predict_pb2.PredictRequest()
        request.model_spec.name = model
        request.inputs[input_alias].CopyFrom(tf.make_tensor_proto(x))
        response = stub.Predict(request, 60.0)
        np.savez(out / "served.npz", **{k: tf.make_ndarray(v) for k, v in response.outputs.items()})

        meta_request = get_model_metadata_pb2.GetModelMetadataRequest()
        meta_request.model_spec.name = model
        meta_request.metadata_field.append("signature_def")
        meta = stub.GetModelMetadata(meta_request, 60.0)
        signature_map = get_model_metadata_pb2.SignatureDefMap()
        meta.metadata["signature_def"].Unpack(signature_map)
    served = signature_map.signature_def["serving_default"]
    metadata = {
        side: {
            k: [
                tf.dtypes.as_dtype(v.dtype).name,
                None if v.tensor_shape.unknown_rank else [d.size for d in v.tensor_shape.dim],
            ]
            for k, v in getattr(served, side).items()
        }
        for side in ("inputs", "outputs")
    }
    result = {"metadata": metadata, "signature": signature, "method_name": served.method_name}
    (out / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:5])
