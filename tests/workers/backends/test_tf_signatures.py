"""SignatureDefs as the worker serves them, or lists them for the metadata only. The messages are
TensorFlow's SignatureDef (tensorgate's generated copy: same names, same fields), without
importing TensorFlow."""

from __future__ import annotations

import base64

import pytest

from channel.dtypes import DTYPE_NAMES
from gateway._pb.tensorflow.core.framework import types_pb2
from gateway._pb.tensorflow.core.protobuf import meta_graph_pb2
from gateway.tfserving.codec import tensor_types
from workers.backends.tf_signatures import metadata_only, served_signature

NAMES = {int(tensor_types.data_type(name)): name for name in DTYPE_NAMES}
"""What ``dtype_names(tf)`` gives: TensorFlow spells its dtypes as the canonical names."""


def _info(name: str, dtype: int, shape: list[int] | None) -> meta_graph_pb2.TensorInfo:
    info = meta_graph_pb2.TensorInfo(name=name, dtype=types_pb2.DataType.ValueType(dtype))
    if shape is None:
        info.tensor_shape.unknown_rank = True
    for size in shape or ():
        info.tensor_shape.dim.add(size=size)
    return info


def _predict() -> meta_graph_pb2.SignatureDef:
    signature = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/predict")
    signature.inputs["x"].CopyFrom(_info("x:0", types_pb2.DT_FLOAT, [-1, 1]))
    signature.inputs["examples"].CopyFrom(_info("tf_example:0", types_pb2.DT_STRING, None))
    signature.outputs["y"].CopyFrom(_info("y:0", types_pb2.DT_HALF, []))
    return signature


def test_a_servable_signature_maps_aliases_to_graph_tensors() -> None:
    served = served_signature(NAMES, _predict())
    assert served.inputs == {"examples": "tf_example:0", "x": "x:0"}
    assert served.outputs == {"y": "y:0"}
    assert served.wire == {
        "inputs": [
            {"name": "examples", "dtype": "string", "shape": None, "tensor_name": "tf_example:0"},
            {"name": "x", "dtype": "float32", "shape": [-1, 1], "tensor_name": "x:0"},
        ],
        "outputs": [{"name": "y", "dtype": "float16", "shape": [], "tensor_name": "y:0"}],
        "method_name": "tensorflow/serving/predict",
    }


def test_a_sparse_tensor_cannot_be_served() -> None:
    signature = _predict()
    signature.inputs["ids"].coo_sparse.values_tensor_name = "ids/values:0"
    with pytest.raises(ValueError, match="tensor 'ids' is not a dense named tensor"):
        served_signature(NAMES, signature)


def test_a_tensor_of_another_dtype_cannot_be_served() -> None:
    signature = meta_graph_pb2.SignatureDef()
    signature.outputs["init"].CopyFrom(_info("NoOp", types_pb2.DT_INVALID, None))
    with pytest.raises(ValueError, match="tensor 'init' has dtype 0, which cannot be served"):
        served_signature(NAMES, signature)


def test_an_unservable_signature_is_listed_with_its_definition() -> None:
    signature = _predict()
    entry = metadata_only(signature, "tensor 'ids' is not a dense named tensor")
    assert entry["inputs"] == entry["outputs"] == []
    assert entry["method_name"] == "tensorflow/serving/predict"
    assert entry["unservable"] == "tensor 'ids' is not a dense named tensor"
    assert meta_graph_pb2.SignatureDef.FromString(base64.b64decode(entry["definition"])) == (
        signature
    )
