"""TensorProto ⇄ numpy: round trips for every dtype, TF's typed-field rules, and the bounds."""

from __future__ import annotations

import struct
import tracemalloc
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gateway._pb.tensorflow.core.framework import tensor_shape_pb2, types_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.tfserving.codec import tensor as tensor_codec

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
NUMERIC = [name for name in NAMES if name != "string"]
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
PROPERTY_SETTINGS = settings(max_examples=settings.default.max_examples * 3 // 5)
"""31 parametrized cases: 3/5 of the profile's examples each (60 under ``ci``)."""
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)


def _strings(shape: tuple[int, ...]) -> st.SearchStrategy[npt.NDArray[Any]]:
    element = st.one_of(st.binary(max_size=12), st.text(max_size=6).map(str.encode))
    return hnp.arrays(np.dtype(object), shape, elements=element)


def _from_bits(dtype: np.dtype[Any], shape: tuple[int, ...]) -> st.SearchStrategy[Any]:
    """Arbitrary bit patterns (NaN payloads, subnormals, -0.0, extreme ints) of ``dtype``."""
    size = int(np.prod(shape))
    raw = hnp.arrays(np.uint8, size * dtype.itemsize)
    return raw.map(lambda data: data.view(dtype).reshape(shape))


def _arrays(name: str, shape: tuple[int, ...]) -> st.SearchStrategy[npt.NDArray[Any]]:
    dtype = tensor_codec.numpy_dtype(name)
    if name == "string":
        return _strings(shape)
    if name == "bool":
        return hnp.arrays(dtype, shape)
    if name in ("bfloat16", "float16"):
        return _from_bits(dtype, shape)
    return st.one_of(hnp.arrays(dtype, shape), _from_bits(dtype, shape))


def _round_trip(array: npt.NDArray[Any], *, as_tensor_content: bool) -> npt.NDArray[Any]:
    proto = tensor_codec.from_ndarray(array, as_tensor_content=as_tensor_content)
    parsed = TensorProto.FromString(proto.SerializeToString())
    return tensor_codec.to_ndarray(parsed, max_elements=max(array.size, *array.shape, 1))


def _assert_identical(actual: npt.NDArray[Any], expected: npt.NDArray[Any]) -> None:
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


def _proto(name: str, shape: list[int], **fields: Any) -> TensorProto:
    return TensorProto(
        dtype=tensor_codec.data_type(name),
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in shape]
        ),
        **fields,
    )


def _decode(proto: TensorProto, max_elements: int = 1000) -> npt.NDArray[Any]:
    return tensor_codec.to_ndarray(
        TensorProto.FromString(proto.SerializeToString()), max_elements=max_elements
    )


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_round_trip_is_bit_identical_in_both_encodings(name: str, data: st.DataObject) -> None:
    array = data.draw(SHAPES.flatmap(lambda shape: _arrays(name, shape)))
    for as_tensor_content in (False, True):
        _assert_identical(_round_trip(array, as_tensor_content=as_tensor_content), array)


@pytest.mark.parametrize("name", NUMERIC)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_non_native_byte_order_and_non_contiguous_inputs(name: str, data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4))
    array = data.draw(_arrays(name, shape))
    variants = [array.T, array[:, ::2], np.asfortranarray(array)]
    if name not in ("bool", "bfloat16", "int8", "uint8"):
        variants.append(array.astype(array.dtype.newbyteorder(">")))
    for variant in variants:
        expected = np.ascontiguousarray(variant, dtype=array.dtype)
        for as_tensor_content in (False, True):
            _assert_identical(_round_trip(variant, as_tensor_content=as_tensor_content), expected)


def test_string_inputs_of_every_numpy_kind_become_bytes() -> None:
    expected = np.array([b"abc", "é".encode(), b""], dtype=object)
    for array in (
        np.array(["abc", "é", ""], dtype=object),
        np.array(["abc", "é", ""]),
        np.array([b"abc", "é".encode(), b""], dtype="S"),
    ):
        for as_tensor_content in (False, True):
            proto = tensor_codec.from_ndarray(array, as_tensor_content=as_tensor_content)
            assert list(proto.string_val) == expected.tolist()
            assert proto.tensor_content == b""
            _assert_identical(_decode(proto), expected)


def test_typed_fields_by_default_tensor_content_on_request() -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    typed = tensor_codec.from_ndarray(array)
    assert list(typed.float_val) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert typed.tensor_content == b""
    assert [dim.size for dim in typed.tensor_shape.dim] == [2, 3]
    content = tensor_codec.from_ndarray(array, as_tensor_content=True)
    assert content.tensor_content == array.tobytes()
    assert len(content.float_val) == 0
    assert [dim.size for dim in content.tensor_shape.dim] == [2, 3]


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)])
def test_shape_is_always_set(shape: tuple[int, ...]) -> None:
    proto = tensor_codec.from_ndarray(np.zeros(shape, dtype=np.int64))
    assert proto.HasField("tensor_shape")
    assert tuple(dim.size for dim in proto.tensor_shape.dim) == shape
    assert tensor_codec.shape_of(proto) == shape


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
    array = values.astype(tensor_codec.numpy_dtype(name))
    if name.startswith("complex"):
        array = array + 1j * array[::-1]
    slow = TensorProto(dtype=tensor_codec.data_type(name))
    slow.tensor_shape.dim.add(size=array.size)
    component = array.view(np.float32 if name == "complex64" else np.float64)
    getattr(slow, field).extend((component if name.startswith("complex") else array).tolist())
    assert tensor_codec.from_ndarray(array).SerializeToString() == slow.SerializeToString()


def test_short_typed_lists_repeat_their_last_value() -> None:
    nan_with_payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_ABCD))[0]
    cases: list[tuple[TensorProto, npt.NDArray[Any]]] = [
        (_proto("float32", [2, 2], float_val=[1.0, 2.5]), np.array([[1, 2.5], [2.5, 2.5]], "f4")),
        (_proto("int32", [3], int_val=[-7]), np.array([-7, -7, -7], np.int32)),
        (_proto("int8", [3], int_val=[1, -128]), np.array([1, -128, -128], np.int8)),
        (_proto("uint64", [2], uint64_val=[2**64 - 1]), np.full(2, 2**64 - 1, np.uint64)),
        (_proto("bool", [3], bool_val=[False, True]), np.array([False, True, True])),
        (_proto("float16", [3], half_val=[0x3C00]), np.ones(3, np.float16)),
        (_proto("bfloat16", [2], half_val=[0xC000]), np.full(2, -2, ml_dtypes.bfloat16)),
        (
            _proto("complex64", [3], scomplex_val=[1.0, -2.0]),
            np.full(3, 1 - 2j, np.complex64),
        ),
        (
            _proto("string", [2, 2], string_val=[b"a", b"\xff"]),
            np.array([[b"a", b"\xff"], [b"\xff", b"\xff"]], dtype=object),
        ),
        (
            _proto("float64", [3], double_val=[0.0, nan_with_payload]),
            np.array([0.0, nan_with_payload, nan_with_payload]),
        ),
    ]
    for proto, expected in cases:
        _assert_identical(_decode(proto), expected)


@pytest.mark.parametrize("name", NAMES)
def test_empty_typed_list_means_zeros(name: str) -> None:
    dtype = tensor_codec.numpy_dtype(name)
    expected = np.full((2, 3), b"", dtype=object) if name == "string" else np.zeros((2, 3), dtype)
    _assert_identical(_decode(_proto(name, [2, 3])), expected)


@pytest.mark.parametrize(
    "proto",
    [
        _proto("float32", [2], float_val=[1, 2, 3]),
        _proto("int64", [], int64_val=[1, 2]),
        _proto("string", [1], string_val=[b"a", b"b"]),
        _proto("complex128", [1], dcomplex_val=[1, 2, 3, 4]),
        _proto("float16", [0], half_val=[1]),
    ],
    ids=["float32", "scalar-int64", "string", "complex128", "zero-size-float16"],
)
def test_typed_list_longer_than_the_shape_is_rejected(proto: TensorProto) -> None:
    with pytest.raises(InvalidArgument, match="more than the"):
        _decode(proto)


def test_complex_values_must_come_in_pairs() -> None:
    with pytest.raises(InvalidArgument, match=r"3 values, not \(real, imag\) pairs"):
        _decode(_proto("complex64", [2], scomplex_val=[1, 2, 3]))


@pytest.mark.parametrize(
    ("name", "shape", "content", "message"),
    [
        ("float32", [2, 3], b"\0" * 20, "must be 24 bytes, got 20"),
        ("int64", [1], b"\0" * 9, "must be 8 bytes, got 9"),
        ("bfloat16", [0], b"\0\0", "must be 0 bytes, got 2"),
    ],
)
def test_wrong_tensor_content_length_is_rejected(
    name: str, shape: list[int], content: bytes, message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        _decode(_proto(name, shape, tensor_content=content))


def test_tensor_content_wins_over_typed_values_and_is_a_read_only_view() -> None:
    array = np.array([[1.5, -2.0]], dtype=np.float32)
    decoded = _decode(_proto("float32", [1, 2], tensor_content=array.tobytes(), float_val=[9]))
    _assert_identical(decoded, array)
    assert not decoded.flags.owndata
    assert not decoded.flags.writeable


def test_bool_content_bytes_other_than_zero_and_one_are_true() -> None:
    decoded = _decode(_proto("bool", [3], tensor_content=b"\x00\x02\x01"))
    _assert_identical(decoded, np.array([False, True, True]))


def test_string_tensor_content_in_tensorflows_encoding() -> None:
    """Lengths as varint32s first, then the bytes (``port::EncodeStringList``)."""
    strings = [b"", b"x" * 200, b"ab"]
    content = b"\x00\xc8\x01\x02" + b"".join(strings)
    decoded = _decode(_proto("string", [3], tensor_content=content, string_val=[b"ignored"]))
    _assert_identical(decoded, np.array(strings, dtype=object))
    with pytest.raises(InvalidArgument, match="declares 202 bytes of strings, has 201"):
        _decode(_proto("string", [3], tensor_content=content[:-1]))
    with pytest.raises(InvalidArgument, match="truncated length prefix"):
        _decode(_proto("string", [3], tensor_content=b"\x00\xc8"))


def test_huge_declared_shape_is_rejected_before_allocating() -> None:
    proto = _proto("float32", [1_000_000, 1_000_000])
    tracemalloc.start()
    try:
        with pytest.raises(InvalidArgument) as error:
            tensor_codec.to_ndarray(proto, max_elements=1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.value.message == (
        "tensor with shape [1000000, 1000000] has 1000000000000 elements, over the limit of 1000"
    )
    assert peak < 1_000_000


def test_element_limit_is_inclusive() -> None:
    proto = _proto("int32", [2, 5], int_val=[1])
    assert tensor_codec.to_ndarray(proto, max_elements=10).shape == (2, 5)
    with pytest.raises(InvalidArgument, match="has 10 elements, over the limit of 9"):
        tensor_codec.to_ndarray(proto, max_elements=9)


def test_negative_dims_unknown_rank_and_too_many_dims_are_rejected() -> None:
    with pytest.raises(InvalidArgument, match=r"shape \[2, -1\] has a negative dimension"):
        _decode(_proto("float32", [2, -1]))
    unknown = _proto("float32", [])
    unknown.tensor_shape.unknown_rank = True
    with pytest.raises(InvalidArgument, match="unknown rank"):
        _decode(unknown)
    with pytest.raises(InvalidArgument, match="65 dimensions, over the limit of 64"):
        _decode(_proto("float32", [1] * 65))


@pytest.mark.parametrize("enum_name", UNSUPPORTED)
def test_unsupported_dtypes_are_rejected_by_name(enum_name: str) -> None:
    value = types_pb2.DataType.Value(enum_name)
    proto = TensorProto(dtype=value, tensor_content=b"\0" * 4)
    proto.tensor_shape.dim.add(size=1)
    with pytest.raises(InvalidArgument, match=f"unsupported tensor dtype {enum_name}$"):
        _decode(proto)
    with pytest.raises(InvalidArgument, match=enum_name):
        tensor_codec.dtype_name(value)


def test_unknown_enum_number_is_rejected() -> None:
    with pytest.raises(InvalidArgument, match="unsupported tensor dtype DataType 999"):
        tensor_codec.dtype_name(999)


def test_half_val_holds_float16_and_bfloat16_bit_patterns() -> None:
    half_bits = [0x3C00, 0xC000, 0x7C00, 0x7E01, 0x8000, 0x0001]
    decoded = _decode(_proto("float16", [6], half_val=half_bits))
    assert decoded.view(np.uint16).tolist() == half_bits
    np.testing.assert_array_equal(decoded[[0, 1, 2]], np.array([1.0, -2.0, np.inf], np.float16))
    bf16_bits = [0x3F80, 0xC000, 0x7F80, 0x7FC1, 0x8000, 0x0001]
    decoded = _decode(_proto("bfloat16", [6], half_val=bf16_bits))
    assert decoded.dtype == ml_dtypes.bfloat16
    assert decoded.view(np.uint16).tolist() == bf16_bits
    assert decoded[:3].astype(np.float32).tolist() == [1.0, -2.0, np.inf]
    encoded = tensor_codec.from_ndarray(np.array([1.0, -2.0], ml_dtypes.bfloat16))
    assert list(encoded.half_val) == [0x3F80, 0xC000]
    assert list(tensor_codec.from_ndarray(np.array([1.0], np.float16)).half_val) == [0x3C00]


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
        _decode(_proto(name, [len(bad)], **{field: bad}))


@pytest.mark.parametrize("name", ["int8", "int16", "uint8", "uint16"])
def test_narrow_int_boundaries_are_accepted(name: str) -> None:
    info = np.iinfo(tensor_codec.numpy_dtype(name))
    decoded = _decode(_proto(name, [2], int_val=[int(info.min), int(info.max)]))
    _assert_identical(decoded, np.array([info.min, info.max], tensor_codec.numpy_dtype(name)))


def test_name_tables_agree() -> None:
    for name in NAMES:
        assert tensor_codec.dtype_name(tensor_codec.data_type(name)) == name
    assert tensor_codec.data_type("float32") == types_pb2.DT_FLOAT
    assert tensor_codec.data_type("float16") == types_pb2.DT_HALF
    assert tensor_codec.numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert tensor_codec.numpy_dtype("string") == np.dtype(object)
    with pytest.raises(InvalidArgument, match="unknown dtype name 'float8'"):
        tensor_codec.data_type("float8")


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
        tensor_codec.from_ndarray(array)


def test_string_elements_must_be_bytes_or_str() -> None:
    with pytest.raises(InvalidArgument, match="element of type int, expected bytes or str"):
        tensor_codec.from_ndarray(np.array([b"a", 3], dtype=object))


def test_tensor_over_two_gib_is_resource_exhausted() -> None:
    huge = np.broadcast_to(np.float32(0), (2**29 + 1,))  # a view: no memory behind it
    for as_tensor_content in (False, True):
        with pytest.raises(ResourceExhausted, match="over protobuf's limit"):
            tensor_codec.from_ndarray(huge, as_tensor_content=as_tensor_content)
