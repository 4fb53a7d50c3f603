"""The OFFICIAL TF Serving client (tensorflow_serving.apis + tf.make_*) against a container's gRPC
port, in a process of its own (TensorFlow's protos and ours must never share one). Usage:
``python image_tf_client_script.py TARGET MODEL INPUTS.npz OUT.json``: Predict on MODEL's
``serving_default`` with every array of INPUTS.npz as the input of its name, and GetModelStatus;
OUT.json gets ``outputs`` (name: {"dtype", "shape", "value"}), ``version`` and ``status``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import grpc
import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import (
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)


def main(target: str, model: str, inputs_path: str, out_path: str) -> None:
    result: dict[str, object] = {}
    with grpc.insecure_channel(target) as channel, np.load(inputs_path) as inputs:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        request = predict_pb2.PredictRequest()
        request.model_spec.name = model
        request.model_spec.signature_name = "serving_default"
        for name in inputs.files:
            request.inputs[name].CopyFrom(tf.make_tensor_proto(inputs[name]))
        response = stub.Predict(request, 60.0)
        outputs = {}
        for name, proto in response.outputs.items():
            value = tf.make_ndarray(proto)
            outputs[name] = {
                "dtype": value.dtype.name,
                "shape": list(value.shape),
                "value": value.ravel().tolist(),
            }
        result["outputs"] = outputs
        result["version"] = response.model_spec.version.value

        status_request = get_model_status_pb2.GetModelStatusRequest()
        status_request.model_spec.name = model
        status = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(
            status_request, 60.0
        )
        result["status"] = [
            [s.version, get_model_status_pb2.ModelVersionStatus.State.Name(s.state)]
            for s in status.model_version_status
        ]
    Path(out_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:5])
