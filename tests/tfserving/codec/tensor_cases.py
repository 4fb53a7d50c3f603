"""What the TensorProto codec's tests share: every canonical dtype name, a TensorProto builder,
a decode through the wire, and a bit-for-bit array comparison."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gateway._pb.tensorflow.core.framework import tensor_shape_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.tfserving.codec import tensor_decode, tensor_types

NAMES = [
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "string",
    "complex64",
    "complex128",
]


def assert_identical(actual: npt.NDArray[Any], expected: npt.NDArray[Any]) -> None:
    """Same dtype, shape and bits (for strings: the same ``bytes`` objects' values)."""
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if expected.dtype == object:
        assert all(type(item) is bytes for item in actual.ravel().tolist())
        assert actual.ravel().tolist() == expected.ravel().tolist()
    else:
        bits = np.ascontiguousarray(actual).reshape(-1).view(np.uint8)
        want = np.ascontiguousarray(expected).reshape(-1).view(np.uint8)
        np.testing.assert_array_equal(bits, want)


def tensor_proto(name: str, shape: list[int], **fields: Any) -> TensorProto:
    """A TensorProto of dtype ``name`` and ``shape`` with ``fields`` (typed values, content)."""
    return TensorProto(
        dtype=tensor_types.data_type(name),
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in shape]
        ),
        **fields,
    )


def decode(message: TensorProto, max_elements: int = 1000) -> npt.NDArray[Any]:
    """``message`` serialized, parsed back and decoded (as a request's tensor is)."""
    return tensor_decode.to_ndarray(
        TensorProto.FromString(message.SerializeToString()), max_elements=max_elements
    )
