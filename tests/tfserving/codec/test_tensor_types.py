"""The DataType and typed field of each canonical dtype, and the lookups both ways."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from channel.dtypes import DTYPE_NAMES
from gateway._pb.tensorflow.core.framework import types_pb2
from gateway.errors import InvalidArgument
from gateway.tfserving.codec import tensor_types
from tests.tfserving.codec.tensor_cases import NAMES


def test_unknown_enum_number_is_rejected() -> None:
    with pytest.raises(InvalidArgument, match="unsupported tensor dtype DataType 999"):
        tensor_types.canonical_name(999)


def test_name_tables_agree() -> None:
    for name in NAMES:
        assert tensor_types.canonical_name(tensor_types.data_type(name)) == name
    assert tensor_types.data_type("float32") == types_pb2.DT_FLOAT
    assert tensor_types.data_type("float16") == types_pb2.DT_HALF
    assert tensor_types.by_name("bfloat16").dtype == np.dtype(ml_dtypes.bfloat16)
    assert tensor_types.by_name("string").dtype == np.dtype(object)
    with pytest.raises(InvalidArgument, match="unknown dtype name 'float8'"):
        tensor_types.data_type("float8")


def test_every_canonical_dtype_has_a_type() -> None:
    assert set(NAMES) == DTYPE_NAMES
    for name in NAMES:
        spec = tensor_types.by_name(name)
        assert spec.name == name and tensor_types.lookup(spec.data_type) is spec


@pytest.mark.parametrize(
    ("name", "enum_name", "field"),
    [
        ("float32", "DT_FLOAT", "float_val"),
        ("float16", "DT_HALF", "half_val"),
        ("bfloat16", "DT_BFLOAT16", "half_val"),
        ("uint8", "DT_UINT8", "int_val"),
        ("uint32", "DT_UINT32", "uint32_val"),
        ("string", "DT_STRING", "string_val"),
        ("complex64", "DT_COMPLEX64", "scomplex_val"),
    ],
)
def test_tensorflows_names_and_fields(name: str, enum_name: str, field: str) -> None:
    assert tensor_types.data_type_name(name) == enum_name
    assert tensor_types.by_name(name).field == field
    assert tensor_types.data_type(name) == types_pb2.DataType.Value(enum_name)


def test_numpy_dtypes_in_either_byte_order_and_every_string_kind() -> None:
    assert tensor_types.for_numpy(np.dtype(">f8")).name == "float64"
    assert tensor_types.for_numpy(np.dtype(ml_dtypes.bfloat16)).name == "bfloat16"
    for kind in ("O", "S3", "U2"):
        assert tensor_types.for_numpy(np.dtype(kind)) is tensor_types.STRING
    with pytest.raises(InvalidArgument, match="unsupported numpy dtype datetime64"):
        tensor_types.for_numpy(np.dtype("datetime64[s]"))


def test_complex_values_are_pairs_of_their_component() -> None:
    assert {
        "complex64": np.dtype(np.float32),
        "complex128": np.dtype(np.float64),
    } == tensor_types.COMPONENT
