"""numpy → TensorProto: typed fields by default, tensor_content on request, the packed fast
path, and what cannot be encoded."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest

from channel.dtypes import numpy_dtype
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.tfserving.codec import tensor_decode, tensor_encode, tensor_types


def test_typed_fields_by_default_tensor_content_on_request() -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    typed = tensor_encode.from_ndarray(array)
    assert list(typed.float_val) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert typed.tensor_content == b""
    assert [dim.size for dim in typed.tensor_shape.dim] == [2, 3]
    content = tensor_encode.from_ndarray(array, as_tensor_content=True)
    assert content.tensor_content == array.tobytes()
    assert len(content.float_val) == 0
    assert [dim.size for dim in content.tensor_shape.dim] == [2, 3]


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)])
def test_shape_is_always_set(shape: tuple[int, ...]) -> None:
    proto = tensor_encode.from_ndarray(np.zeros(shape, dtype=np.int64))
    assert proto.HasField("tensor_shape")
    assert tuple(dim.size for dim in proto.tensor_shape.dim) == shape
    assert tensor_decode.declared(proto, max_elements=10).shape == shape


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("float32", "float_val"),
        ("float64", "double_val"),
        ("complex64", "scomplex_val"),
        ("complex128", "dcomplex_val"),
        ("bool", "bool_val"),
    ],
)
def test_packed_fast_path_serializes_like_extend(name: str, field: str) -> None:
    """The raw packed record parses into exactly what ``extend`` would have built."""
    values = np.random.default_rng(7).standard_normal(3000) * 1e30
    array = values.astype(numpy_dtype(name))
    if name.startswith("complex"):
        array = array + 1j * array[::-1]
    slow = TensorProto(dtype=tensor_types.data_type(name))
    slow.tensor_shape.dim.add(size=array.size)
    component = array.view(np.float32 if name == "complex64" else np.float64)
    getattr(slow, field).extend((component if name.startswith("complex") else array).tolist())
    assert tensor_encode.from_ndarray(array).SerializeToString() == slow.SerializeToString()


@pytest.mark.parametrize(
    "array",
    [
        np.array(["2020-01-01"], dtype="datetime64[D]"),
        np.zeros(2, dtype=ml_dtypes.float8_e5m2),
        np.zeros(2, dtype=[("a", np.int32)]),
    ],
    ids=["datetime64", "float8", "structured"],
)
def test_unsupported_numpy_dtypes_are_rejected(array: npt.NDArray[Any]) -> None:
    with pytest.raises(InvalidArgument, match="unsupported numpy dtype"):
        tensor_encode.from_ndarray(array)


def test_string_elements_must_be_bytes_or_str() -> None:
    with pytest.raises(InvalidArgument, match="element of type int, expected bytes or str"):
        tensor_encode.from_ndarray(np.array([b"a", 3], dtype=object))


def test_tensor_over_two_gib_is_resource_exhausted() -> None:
    huge = np.broadcast_to(np.float32(0), (2**29 + 1,))  # a view: no memory behind it
    for as_tensor_content in (False, True):
        with pytest.raises(ResourceExhausted, match="over protobuf's limit"):
            tensor_encode.from_ndarray(huge, as_tensor_content=as_tensor_content)


def test_any_byte_order_and_layout_is_written_little_endian_and_row_major() -> None:
    array = np.arange(6, dtype=">i4").reshape(2, 3).T
    content = tensor_encode.from_ndarray(array, as_tensor_content=True).tensor_content
    assert content == np.ascontiguousarray(array, dtype="<i4").tobytes()
    assert list(tensor_encode.from_ndarray(array).int_val) == [0, 3, 1, 4, 2, 5]


def test_half_values_go_to_half_val_as_bit_patterns() -> None:
    halves = np.array([1.0, -0.0], np.float16)
    assert list(tensor_encode.from_ndarray(halves).half_val) == [0x3C00, 0x8000]
    brains = np.array([1.0], ml_dtypes.bfloat16)
    assert tensor_encode.from_ndarray(brains, as_tensor_content=True).tensor_content == (
        b"\x80\x3f"
    )


def test_an_empty_array_writes_no_values() -> None:
    proto = tensor_encode.from_ndarray(np.zeros((0, 4), np.float64))
    assert (
        proto.ByteSize()
        == TensorProto(dtype=proto.dtype, tensor_shape=proto.tensor_shape).ByteSize()
    )
