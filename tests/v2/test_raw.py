"""The datatype table, declared headers and bounds, and the raw byte layout."""

from __future__ import annotations

import struct
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from channel.dtypes import DTYPE_NAMES
from gateway.errors import Code, InvalidArgument, ResourceExhausted, ServingError
from gateway.v2 import datatypes, declared, raw
from gateway.v2.declared import Limits

EXPECTED = {
    "BOOL": ("bool", 1, "bool_contents"),
    "UINT8": ("uint8", 1, "uint_contents"),
    "UINT16": ("uint16", 2, "uint_contents"),
    "UINT32": ("uint32", 4, "uint_contents"),
    "UINT64": ("uint64", 8, "uint64_contents"),
    "INT8": ("int8", 1, "int_contents"),
    "INT16": ("int16", 2, "int_contents"),
    "INT32": ("int32", 4, "int_contents"),
    "INT64": ("int64", 8, "int64_contents"),
    "FP16": ("float16", 2, None),
    "BF16": ("bfloat16", 2, None),
    "FP32": ("float32", 4, "fp32_contents"),
    "FP64": ("float64", 8, "fp64_contents"),
    "BYTES": ("string", 0, "bytes_contents"),
}


def test_the_table() -> None:
    assert tuple(EXPECTED) == datatypes.DATATYPES
    for name, (dtype_name, size, field) in EXPECTED.items():
        row = datatypes.lookup(name)
        assert (row.dtype_name, row.itemsize, row.field) == (dtype_name, size, field)
        assert datatypes.for_dtype_name(dtype_name) == row
        assert datatypes.for_numpy(row.numpy) == row
        assert datatypes.datatype_of(dtype_name) == name
    assert datatypes.for_numpy(np.dtype(ml_dtypes.bfloat16)).name == "BF16"
    assert datatypes.for_numpy(np.dtype("S3")).name == "BYTES"
    assert datatypes.for_numpy(np.dtype("<U2")).name == "BYTES"
    assert datatypes.for_numpy(np.dtype(">i4")).name == "INT32"


def test_every_canonical_dtype_but_complex_has_a_datatype() -> None:
    carried = {datatypes.lookup(n).dtype_name for n in datatypes.DATATYPES}
    assert DTYPE_NAMES - carried == {"complex64", "complex128"}
    for name in ("complex64", "complex128"):
        with pytest.raises(ServingError) as info:
            datatypes.for_dtype_name(name)
        assert info.value.code == Code.UNIMPLEMENTED


@pytest.mark.parametrize("name", ["fp32", "FLOAT", "STRING", "", "TYPE_FP32"])
def test_unknown_datatypes_are_invalid(name: str) -> None:
    with pytest.raises(InvalidArgument, match="invalid datatype"):
        datatypes.lookup(name)


def test_declare_checks_shapes_and_bounds(limits: Limits) -> None:
    header = declared.declare("x", "FP32", [2, 3], limits)
    assert (header.shape, header.elements, header.datatype.name) == ((2, 3), 6, "FP32")
    assert declared.decoded_bytes(header, 999) == 24
    with pytest.raises(InvalidArgument, match="input 'x': invalid datatype 'F32'"):
        declared.declare("x", "F32", [1], limits)
    with pytest.raises(InvalidArgument, match="negative dimension"):
        declared.declare("x", "FP32", [-1, 3], limits)
    with pytest.raises(InvalidArgument, match="over the limit of 1000"):
        declared.declare("x", "FP32", [1001], limits)
    with pytest.raises(InvalidArgument, match="over the limit of 1000"):
        declared.declare("x", "FP32", [0, 10**12], limits)  # zero elements, a huge dimension
    with pytest.raises(InvalidArgument, match="65 dimensions"):
        declared.declare("x", "FP32", [1] * 65, limits)


def test_decoded_bytes_of_strings_count_their_overhead(limits: Limits) -> None:
    header = declared.declare("s", "BYTES", [3], limits)
    assert declared.decoded_bytes(header, 10) == 3 * declared.STRING_ELEMENT_BYTES + 10


def test_check_total_is_resource_exhausted() -> None:
    declared.check_total(100, Limits(10, 100))
    declared.check_total(10**12, Limits(10, None))
    with pytest.raises(ResourceExhausted, match="101 bytes once decoded, over the limit of 100"):
        declared.check_total(101, Limits(10, 100))


def _header(datatype: str, shape: tuple[int, ...]) -> declared.Declared:
    return declared.declare("x", datatype, shape, Limits(10**6))


def test_raw_layout_examples() -> None:
    assert raw.to_raw(np.array([1, 2], np.int32), datatypes.lookup("INT32")) == bytes.fromhex(
        "0100000002000000"
    )
    strings = np.array([b"ab", b""], dtype=object)
    encoded = raw.to_raw(strings, datatypes.lookup("BYTES"))
    assert encoded == bytes.fromhex("02000000616200000000")
    decoded = raw.from_raw(encoded, _header("BYTES", (2,)))
    assert decoded.tolist() == [b"ab", b""]
    assert raw.to_raw(np.array(["é"], dtype=object), datatypes.lookup("BYTES")) == (
        struct.pack("<I", 2) + "é".encode()
    )
    big_endian = np.array([1.5], dtype=">f4")
    assert raw.to_raw(big_endian, datatypes.lookup("FP32")) == struct.pack("<f", 1.5)


def test_raw_fixed_size_is_a_read_only_view() -> None:
    data = struct.pack("<4f", 1, 2, 3, 4)
    array = raw.from_raw(data, _header("FP32", (2, 2)))
    assert array.tolist() == [[1, 2], [3, 4]]
    assert not array.flags.writeable
    assert np.shares_memory(array, np.frombuffer(data, np.uint8))


def test_raw_bool_bytes_other_than_one_are_true() -> None:
    array = raw.from_raw(bytes([0, 1, 7]), _header("BOOL", (3,)))
    assert array.dtype == np.bool_ and array.tolist() == [False, True, True]


@pytest.mark.parametrize(
    ("datatype", "shape", "data", "message"),
    [
        ("FP32", (2,), b"\x00" * 7, "expected 8 bytes of FP32 data for shape \\[2\\], got 7"),
        ("BYTES", (2,), struct.pack("<I", 1) + b"a", "BYTES data ends at element 1 of 2"),
        ("BYTES", (1,), struct.pack("<I", 5) + b"ab", "declares 5 bytes, only 2 follow"),
        ("BYTES", (1,), struct.pack("<I", 1) + b"ab", "1 bytes follow the 1 BYTES elements"),
        ("BYTES", (1,), b"\x01\x00", "BYTES data ends at element 0 of 1"),
    ],
)
def test_raw_size_errors(datatype: str, shape: tuple[int, ...], data: bytes, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        raw.from_raw(data, _header(datatype, shape))


def test_raw_bytes_refuses_other_elements() -> None:
    with pytest.raises(InvalidArgument, match="element of type int"):
        raw.to_raw(np.array([1], dtype=object), datatypes.lookup("BYTES"))


_NUMERIC = [n for n in datatypes.DATATYPES if n != "BYTES"]


@st.composite
def _arrays(draw: Any) -> tuple[str, Any]:
    name = draw(st.sampled_from(_NUMERIC))
    row = datatypes.lookup(name)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    bits = draw(hnp.arrays(np.uint8, (int(np.prod(shape)) * row.itemsize,)))
    array = np.frombuffer(bits.tobytes(), dtype=row.numpy).reshape(shape)
    if name == "BOOL":
        array = array.view(np.uint8) % 2 == 1
    return name, array


@given(_arrays())
def test_raw_round_trips_bit_for_bit(case: tuple[str, Any]) -> None:
    name, array = case
    row = datatypes.lookup(name)
    data = raw.to_raw(array, row)
    assert len(data) == array.size * row.itemsize
    back = raw.from_raw(data, _header(name, array.shape))
    assert back.dtype == row.numpy and back.shape == array.shape
    assert back.tobytes() == np.ascontiguousarray(array).tobytes()


@given(st.lists(st.binary(max_size=20), max_size=6))
def test_raw_bytes_round_trip(items: list[bytes]) -> None:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    data = raw.to_raw(array, datatypes.lookup("BYTES"))
    assert len(data) == sum(4 + len(i) for i in items)
    assert raw.from_raw(data, _header("BYTES", (len(items),))).tolist() == items
