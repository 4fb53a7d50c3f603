"""Raw tensor bytes ⇄ numpy: the layout of raw_input_contents and the binary data extension."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gateway.decoding import Declared
from gateway.errors import InvalidArgument
from gateway.v2 import datatypes, declared, raw
from gateway.v2.datatypes import Datatype
from gateway.v2.declared import Limits


def _header(datatype: str, shape: tuple[int, ...]) -> Declared[Datatype]:
    return declared.declare_input("x", datatype, shape, Limits(10**6))


def test_raw_layout_examples() -> None:
    assert raw.to_raw(np.array([1, 2], np.int32), datatypes.lookup("INT32")) == bytes.fromhex(
        "0100000002000000"
    )
    strings = np.array([b"ab", b""], dtype=object)
    encoded = raw.to_raw(strings, datatypes.lookup("BYTES"))
    assert encoded == bytes.fromhex("02000000616200000000")
    decoded = raw.from_raw(_header("BYTES", (2,)), encoded)
    assert decoded.tolist() == [b"ab", b""]
    assert raw.to_raw(np.array(["é"], dtype=object), datatypes.lookup("BYTES")) == (
        struct.pack("<I", 2) + "é".encode()
    )
    big_endian = np.array([1.5], dtype=">f4")
    assert raw.to_raw(big_endian, datatypes.lookup("FP32")) == struct.pack("<f", 1.5)


def test_raw_fixed_size_is_a_read_only_view() -> None:
    data = struct.pack("<4f", 1, 2, 3, 4)
    array = raw.from_raw(_header("FP32", (2, 2)), data)
    assert array.tolist() == [[1, 2], [3, 4]]
    assert not array.flags.writeable
    assert np.shares_memory(array, np.frombuffer(data, np.uint8))


def test_raw_bool_bytes_other_than_one_are_true() -> None:
    array = raw.from_raw(_header("BOOL", (3,)), bytes([0, 1, 7]))
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
        raw.from_raw(_header(datatype, shape), data)


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
    back = raw.from_raw(_header(name, array.shape), data)
    assert back.dtype == row.numpy and back.shape == array.shape
    assert back.tobytes() == np.ascontiguousarray(array).tobytes()


@given(st.lists(st.binary(max_size=20), max_size=6))
def test_raw_bytes_round_trip(items: list[bytes]) -> None:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    data = raw.to_raw(array, datatypes.lookup("BYTES"))
    assert len(data) == sum(4 + len(i) for i in items)
    assert raw.from_raw(_header("BYTES", (len(items),)), data).tolist() == items
