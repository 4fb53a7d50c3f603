"""TensorProto → numpy: TensorFlow's typed-field rules, tensor_content, and the bounds checked
before anything is allocated."""

from __future__ import annotations

import struct
import tracemalloc
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest

from channel.dtypes import numpy_dtype
from gateway import decoding
from gateway._pb.tensorflow.core.framework import types_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.errors import InvalidArgument
from gateway.tfserving.codec import tensor_decode, tensor_types
from tests.tfserving.codec.tensor_cases import NAMES, assert_identical, decode, tensor_proto

UNSUPPORTED = [
    "DT_INVALID",
    "DT_RESOURCE",
    "DT_VARIANT",
    "DT_QINT8",
    "DT_QUINT8",
    "DT_QINT16",
    "DT_QUINT16",
    "DT_QINT32",
    "DT_FLOAT_REF",
    "DT_FLOAT8_E5M2",
    "DT_INT4",
]


def test_short_typed_lists_repeat_their_last_value() -> None:
    nan_with_payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_ABCD))[0]
    cases: list[tuple[TensorProto, npt.NDArray[Any]]] = [
        (
            tensor_proto("float32", [2, 2], float_val=[1.0, 2.5]),
            np.array([[1, 2.5], [2.5, 2.5]], "f4"),
        ),
        (tensor_proto("int32", [3], int_val=[-7]), np.array([-7, -7, -7], np.int32)),
        (tensor_proto("int8", [3], int_val=[1, -128]), np.array([1, -128, -128], np.int8)),
        (tensor_proto("uint64", [2], uint64_val=[2**64 - 1]), np.full(2, 2**64 - 1, np.uint64)),
        (tensor_proto("bool", [3], bool_val=[False, True]), np.array([False, True, True])),
        (tensor_proto("float16", [3], half_val=[0x3C00]), np.ones(3, np.float16)),
        (tensor_proto("bfloat16", [2], half_val=[0xC000]), np.full(2, -2, ml_dtypes.bfloat16)),
        (
            tensor_proto("complex64", [3], scomplex_val=[1.0, -2.0]),
            np.full(3, 1 - 2j, np.complex64),
        ),
        (
            tensor_proto("string", [2, 2], string_val=[b"a", b"\xff"]),
            np.array([[b"a", b"\xff"], [b"\xff", b"\xff"]], dtype=object),
        ),
        (
            tensor_proto("float64", [3], double_val=[0.0, nan_with_payload]),
            np.array([0.0, nan_with_payload, nan_with_payload]),
        ),
    ]
    for proto, expected in cases:
        assert_identical(decode(proto), expected)


@pytest.mark.parametrize("name", NAMES)
def test_empty_typed_list_means_zeros(name: str) -> None:
    dtype = numpy_dtype(name)
    expected = np.full((2, 3), b"", dtype=object) if name == "string" else np.zeros((2, 3), dtype)
    assert_identical(decode(tensor_proto(name, [2, 3])), expected)


@pytest.mark.parametrize(
    "proto",
    [
        tensor_proto("float32", [2], float_val=[1, 2, 3]),
        tensor_proto("int64", [], int64_val=[1, 2]),
        tensor_proto("string", [1], string_val=[b"a", b"b"]),
        tensor_proto("complex128", [1], dcomplex_val=[1, 2, 3, 4]),
        tensor_proto("float16", [0], half_val=[1]),
    ],
    ids=["float32", "scalar-int64", "string", "complex128", "zero-size-float16"],
)
def test_typed_list_longer_than_the_shape_is_rejected(proto: TensorProto) -> None:
    with pytest.raises(InvalidArgument, match="more than the"):
        decode(proto)


def test_complex_values_must_come_in_pairs() -> None:
    with pytest.raises(InvalidArgument, match=r"3 values, not \(real, imag\) pairs"):
        decode(tensor_proto("complex64", [2], scomplex_val=[1, 2, 3]))


@pytest.mark.parametrize(
    ("name", "shape", "content", "message"),
    [
        (
            "float32",
            [2, 3],
            b"\0" * 20,
            r"expected 24 bytes of float32 data for shape \[2, 3\], got 20",
        ),
        ("int64", [1], b"\0" * 9, r"expected 8 bytes of int64 data for shape \[1\], got 9"),
        ("bfloat16", [0], b"\0\0", r"expected 0 bytes of bfloat16 data for shape \[0\], got 2"),
    ],
)
def test_wrong_tensor_content_length_is_rejected(
    name: str, shape: list[int], content: bytes, message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        decode(tensor_proto(name, shape, tensor_content=content))


def test_tensor_content_wins_over_typed_values_and_is_a_read_only_view() -> None:
    array = np.array([[1.5, -2.0]], dtype=np.float32)
    decoded = decode(tensor_proto("float32", [1, 2], tensor_content=array.tobytes(), float_val=[9]))
    assert_identical(decoded, array)
    assert not decoded.flags.owndata
    assert not decoded.flags.writeable


def test_bool_content_bytes_other_than_zero_and_one_are_true() -> None:
    decoded = decode(tensor_proto("bool", [3], tensor_content=b"\x00\x02\x01"))
    assert_identical(decoded, np.array([False, True, True]))


def test_string_tensor_content_in_tensorflows_encoding() -> None:
    """Lengths as varint32s first, then the bytes (``port::EncodeStringList``)."""
    strings = [b"", b"x" * 200, b"ab"]
    content = b"\x00\xc8\x01\x02" + b"".join(strings)
    decoded = decode(tensor_proto("string", [3], tensor_content=content, string_val=[b"ignored"]))
    assert_identical(decoded, np.array(strings, dtype=object))
    with pytest.raises(InvalidArgument, match="declares 202 bytes of strings, has 201"):
        decode(tensor_proto("string", [3], tensor_content=content[:-1]))
    with pytest.raises(InvalidArgument, match="truncated length prefix"):
        decode(tensor_proto("string", [3], tensor_content=b"\x00\xc8"))


def test_huge_declared_shape_is_rejected_before_allocating() -> None:
    proto = tensor_proto("float32", [1_000_000, 1_000_000])
    tracemalloc.start()
    try:
        with pytest.raises(InvalidArgument) as error:
            tensor_decode.to_ndarray(proto, max_elements=1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.value.message == (
        "tensor with shape [1000000, 1000000] has 1000000000000 elements, over the limit of 1000"
    )
    assert peak < 1_000_000


def test_element_limit_is_inclusive() -> None:
    proto = tensor_proto("int32", [2, 5], int_val=[1])
    assert tensor_decode.to_ndarray(proto, max_elements=10).shape == (2, 5)
    with pytest.raises(InvalidArgument, match="has 10 elements, over the limit of 9"):
        tensor_decode.to_ndarray(proto, max_elements=9)


def test_negative_dims_unknown_rank_and_too_many_dims_are_rejected() -> None:
    with pytest.raises(InvalidArgument, match=r"shape \[2, -1\] has a negative dimension"):
        decode(tensor_proto("float32", [2, -1]))
    unknown = tensor_proto("float32", [])
    unknown.tensor_shape.unknown_rank = True
    with pytest.raises(InvalidArgument, match="unknown rank"):
        decode(unknown)
    with pytest.raises(InvalidArgument, match="65 dimensions, over the limit of 64"):
        decode(tensor_proto("float32", [1] * 65))


@pytest.mark.parametrize("enum_name", UNSUPPORTED)
def test_unsupported_dtypes_are_rejected_by_name(enum_name: str) -> None:
    value = types_pb2.DataType.Value(enum_name)
    proto = TensorProto(dtype=value, tensor_content=b"\0" * 4)
    proto.tensor_shape.dim.add(size=1)
    with pytest.raises(InvalidArgument, match=f"unsupported tensor dtype {enum_name}$"):
        decode(proto)
    with pytest.raises(InvalidArgument, match=enum_name):
        tensor_types.canonical_name(value)


@pytest.mark.parametrize(
    ("name", "field", "bad"),
    [
        ("int8", "int_val", [127, 128]),
        ("int8", "int_val", [-129]),
        ("uint8", "int_val", [-1]),
        ("uint8", "int_val", [256]),
        ("int16", "int_val", [40000]),
        ("uint16", "int_val", [65536]),
        ("float16", "half_val", [65536]),
        ("bfloat16", "half_val", [-1]),
    ],
)
def test_out_of_range_narrow_ints_are_rejected(name: str, field: str, bad: list[int]) -> None:
    with pytest.raises(InvalidArgument, match=f"{field} value {bad[-1]} is out of range"):
        decode(tensor_proto(name, [len(bad)], **{field: bad}))


@pytest.mark.parametrize("name", ["int8", "int16", "uint8", "uint16"])
def test_narrow_int_boundaries_are_accepted(name: str) -> None:
    info = np.iinfo(numpy_dtype(name))
    decoded = decode(tensor_proto(name, [2], int_val=[int(info.min), int(info.max)]))
    assert_identical(decoded, np.array([info.min, info.max], numpy_dtype(name)))


def test_declared_reads_dtype_shape_and_size_without_decoding() -> None:
    floats = tensor_proto("float32", [2, 3], float_val=[1.0])
    header = tensor_decode.declared(floats, max_elements=6)
    assert (header.wire_type.name, header.shape, header.nbytes, header.elements) == (
        "float32",
        (2, 3),
        24,
        6,
    )
    strings = tensor_proto("string", [2], string_val=[b"abc"])
    per_element = decoding.STRING_ELEMENT_BYTES
    assert tensor_decode.declared(strings, max_elements=2).nbytes == (
        2 * per_element + strings.ByteSize()
    )


def test_a_zero_size_shape_with_a_huge_dimension_is_refused() -> None:
    proto = tensor_proto("float32", [0, 10**12])
    with pytest.raises(InvalidArgument, match="has a dimension of 1000000000000, over the limit"):
        tensor_decode.declared(proto, max_elements=1000)
    assert tensor_decode.declared(tensor_proto("float32", [0, 1000]), max_elements=1000).nbytes == 0


def test_declared_reads_the_dimensions() -> None:
    assert _declared_shape(tensor_proto("int8", [])) == ()
    assert _declared_shape(tensor_proto("int8", [3, 0, 2])) == (3, 0, 2)
    assert _declared_shape(tensor_proto("int8", [1] * decoding.MAX_RANK)) == (1,) * 64


def _declared_shape(proto: TensorProto) -> tuple[int, ...]:
    return tensor_decode.declared(proto, max_elements=100).shape
