"""TensorProto ⇄ numpy through the codec's parts: round trips for every dtype in both encodings,
bit for bit, and each public name defined by one part."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from channel.dtypes import numpy_dtype
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.tfserving.codec import tensor_decode, tensor_encode, tensor_types
from tests.tfserving.codec.tensor_cases import NAMES, assert_identical, decode, tensor_proto

NUMERIC = [name for name in NAMES if name != "string"]
PROPERTY_SETTINGS = settings(max_examples=settings().max_examples * 3 // 5)
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
    dtype = numpy_dtype(name)
    if name == "string":
        return _strings(shape)
    if name == "bool":
        return hnp.arrays(dtype, shape)
    if name in ("bfloat16", "float16"):
        return _from_bits(dtype, shape)
    return st.one_of(hnp.arrays(dtype, shape), _from_bits(dtype, shape))


def _quieted(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array`` with its float32 / complex64 signalling NaNs made quiet, as a typed field
    (``float_val``, ``scomplex_val``) carries them: protobuf's Python API holds each value as a
    Python float, and float32 → double sets a signalling NaN's quiet bit (x86-64's cvtss2sd)."""
    if array.dtype.kind not in "fc" or array.dtype.itemsize not in (4, 8) or array.dtype == "f8":
        return array
    words = np.ascontiguousarray(array).view(np.uint32).copy()
    signalling = ((words & 0x7F800000) == 0x7F800000) & ((words & 0x007FFFFF) != 0)
    signalling &= (words & 0x00400000) == 0
    words[signalling] |= 0x00400000
    return words.view(array.dtype).reshape(array.shape)


def _expected(array: npt.NDArray[Any], *, as_tensor_content: bool) -> npt.NDArray[Any]:
    """What a round trip gives back: the same bits, but for signalling NaNs in a typed field."""
    return array if as_tensor_content else _quieted(array)


def _round_trip(array: npt.NDArray[Any], *, as_tensor_content: bool) -> npt.NDArray[Any]:
    proto = tensor_encode.from_ndarray(array, as_tensor_content=as_tensor_content)
    parsed = TensorProto.FromString(proto.SerializeToString())
    return tensor_decode.to_ndarray(parsed, max_elements=max(array.size, *array.shape, 1))


@pytest.mark.parametrize("name", NAMES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_round_trip_is_bit_identical_in_both_encodings(name: str, data: st.DataObject) -> None:
    array = data.draw(SHAPES.flatmap(lambda shape: _arrays(name, shape)))
    for as_tensor_content in (False, True):
        assert_identical(
            _round_trip(array, as_tensor_content=as_tensor_content),
            _expected(array, as_tensor_content=as_tensor_content),
        )


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
            assert_identical(
                _round_trip(variant, as_tensor_content=as_tensor_content),
                _expected(expected, as_tensor_content=as_tensor_content),
            )


def test_string_inputs_of_every_numpy_kind_become_bytes() -> None:
    expected = np.array([b"abc", "é".encode(), b""], dtype=object)
    for array in (
        np.array(["abc", "é", ""], dtype=object),
        np.array(["abc", "é", ""]),
        np.array([b"abc", "é".encode(), b""], dtype="S"),
    ):
        for as_tensor_content in (False, True):
            proto = tensor_encode.from_ndarray(array, as_tensor_content=as_tensor_content)
            assert list(proto.string_val) == expected.tolist()
            assert proto.tensor_content == b""
            assert_identical(decode(proto), expected)


def test_half_val_holds_float16_and_bfloat16_bit_patterns() -> None:
    half_bits = [0x3C00, 0xC000, 0x7C00, 0x7E01, 0x8000, 0x0001]
    decoded = decode(tensor_proto("float16", [6], half_val=half_bits))
    assert decoded.view(np.uint16).tolist() == half_bits
    np.testing.assert_array_equal(decoded[[0, 1, 2]], np.array([1.0, -2.0, np.inf], np.float16))
    bf16_bits = [0x3F80, 0xC000, 0x7F80, 0x7FC1, 0x8000, 0x0001]
    decoded = decode(tensor_proto("bfloat16", [6], half_val=bf16_bits))
    assert decoded.dtype == ml_dtypes.bfloat16
    assert decoded.view(np.uint16).tolist() == bf16_bits
    assert decoded[:3].astype(np.float32).tolist() == [1.0, -2.0, np.inf]
    encoded = tensor_encode.from_ndarray(np.array([1.0, -2.0], ml_dtypes.bfloat16))
    assert list(encoded.half_val) == [0x3F80, 0xC000]
    assert list(tensor_encode.from_ndarray(np.array([1.0], np.float16)).half_val) == [0x3C00]


CODEC_NAMES = {
    tensor_decode: ("declared", "to_ndarray", "values"),
    tensor_encode: ("MAX_PROTO_BYTES", "from_ndarray"),
    tensor_types: ("by_name", "canonical_name", "data_type", "data_type_name"),
}
"""The codec's public names, each under the part that defines it (importers import from there)."""


@pytest.mark.parametrize(
    ("part", "name"), [(part, name) for part, names in CODEC_NAMES.items() for name in names]
)
def test_each_public_name_is_defined_by_its_part_alone(part: Any, name: str) -> None:
    value = vars(part)[name]
    assert getattr(value, "__module__", part.__name__) == part.__name__
    assert all(name not in vars(other) for other in CODEC_NAMES if other is not part)


@pytest.mark.parametrize("name", ["float32", "complex64"])
def test_a_signalling_nan_keeps_its_bits_in_tensor_content_and_turns_quiet_in_a_typed_field(
    name: str,
) -> None:
    dtype = numpy_dtype(name)
    words = np.array([0x7FA00000, 0x3F800000], dtype=np.uint32)  # a signalling NaN, then 1.0
    array = words.view(dtype)
    assert_identical(_round_trip(array, as_tensor_content=True), array)
    typed = _round_trip(array, as_tensor_content=False).view(np.uint32)
    assert typed.tolist() == [0x7FE00000, 0x3F800000]
