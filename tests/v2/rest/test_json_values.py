"""V2 JSON tensor data ⇄ numpy, per datatype."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gateway.errors import InvalidArgument
from gateway.v2.declared import Limits, declare_input
from gateway.v2.rest import json_values


@pytest.mark.parametrize(
    ("datatype", "data", "expected"),
    [
        ("BOOL", [True, False], [True, False]),
        ("UINT8", [0, 255], [0, 255]),
        ("UINT64", [2**64 - 1, 0], [2**64 - 1, 0]),
        ("INT8", [-128, 127], [-128, 127]),
        ("INT64", [-(2**63), 1], [-(2**63), 1]),
        ("FP16", [0.1, 65504], [np.float16(0.1), 65504]),
        ("BF16", [1, 0.5], [1.0, 0.5]),
        ("FP64", [1e300, 2], [1e300, 2]),
        ("BYTES", ["", "x"], [b"", b"x"]),
    ],
)
def test_json_values_per_datatype(datatype: str, data: list[Any], expected: list[Any]) -> None:
    header = declare_input("v", datatype, [2], Limits(100))
    array = json_values.to_array(data, header)
    assert array.dtype == header.wire_type.numpy
    assert array.tolist() == expected


@pytest.mark.parametrize(
    ("datatype", "data", "message"),
    [
        ("BOOL", [1, 0], "value 0 \\(1\\) of a BOOL tensor is not a boolean"),
        ("INT32", [1, 2.0], "value 1 \\(2.0\\) of a INT32 tensor is not an integer"),
        ("INT32", [True, 1], "is not an integer"),
        ("UINT8", [1, -1], "value -1 is out of range for UINT8"),
        ("INT16", [40000, 1], "out of range for INT16"),
        ("FP32", [1, "2"], 'value 1 \\("2"\\) of a FP32 tensor is not a number'),
        ("BYTES", ["a", 1], "is not a string"),
        ("FP32", [1, 2, 3], "expected 2 values for shape \\[2\\], got 3"),
        ("FP32", [[1], [2, 3]], "expected 2 values for shape \\[2\\], got 3"),
    ],
)
def test_json_value_errors(datatype: str, data: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        json_values.to_array(data, declare_input("v", datatype, [2], Limits(100)))


def test_scalars_and_deep_nesting() -> None:
    assert json_values.to_array(3, declare_input("v", "INT32", [], Limits(10))).tolist() == 3
    deep: Any = [7]
    for _ in range(5000):  # deeper than any recursion limit
        deep = [deep]
    assert json_values.flatten(deep) == [7]


_JSON_DATATYPES = [
    "BOOL",
    "UINT8",
    "UINT32",
    "UINT64",
    "INT8",
    "INT16",
    "INT64",
    "FP16",
    "BF16",
    "FP32",
    "FP64",
]


@given(st.sampled_from(_JSON_DATATYPES), st.data())
def test_json_values_round_trip(datatype: str, data: st.DataObject) -> None:
    header = declare_input("v", datatype, [3], Limits(100))
    row = header.wire_type
    bits = data.draw(hnp.arrays(np.uint8, (3 * row.itemsize,)))
    array = np.frombuffer(bits.tobytes(), dtype=row.numpy)
    if datatype == "BOOL":
        array = array.view(np.uint8) % 2 == 1
    text = orjson.dumps({"data": json_values.to_json(array, row)})
    back = json_values.to_array(json.loads(text)["data"], header)  # NaN literals need stdlib
    assert back.dtype == row.numpy
    if row.numpy.kind in "biu":
        assert back.tolist() == array.tolist()
    else:
        assert np.array_equal(back.astype(np.float64), array.astype(np.float64), equal_nan=True)
