"""The V2 datatype table: names ⇄ canonical dtype names ⇄ numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from channel.dtypes import DTYPE_NAMES
from gateway.errors import Code, InvalidArgument, ServingError
from gateway.v2 import datatypes

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
