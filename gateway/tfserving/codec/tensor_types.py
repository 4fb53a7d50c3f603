"""TensorFlow's ``DataType`` for each canonical dtype, and the typed ``TensorProto`` field that
holds its values: the table both directions of the tensor codec read.

Canonical dtype names and their numpy dtypes are ``channel.dtypes``'s ("float32", ...,
"string"); this module adds only the ``DataType`` enum and typed field of each (``float16`` and
``bfloat16`` share ``half_val``, as bit patterns; complex values are (real, imag) pairs). Every
canonical dtype has one (checked at import), as does nothing else. The wire formats are
little-endian, as is every host this runs on (checked at import too).
"""

from __future__ import annotations

import sys
from typing import Any, Final, NamedTuple

import numpy as np

from channel import dtypes
from channel.dtypes import DTYPE_NAMES
from gateway._pb.tensorflow.core.framework import types_pb2
from gateway.errors import InvalidArgument

if sys.byteorder != "little":  # pragma: no cover - no big-endian deployment target exists
    raise ImportError("gateway.tfserving.codec assumes a little-endian host")


class TensorType(NamedTuple):
    """One canonical dtype as a TensorProto carries it."""

    name: str
    """Canonical name."""
    data_type: types_pb2.DataType.ValueType
    dtype: np.dtype[Any]
    field: str
    """The typed TensorProto field of its values."""


_TF_TYPES: Final = {
    "float32": ("DT_FLOAT", "float_val"),
    "float64": ("DT_DOUBLE", "double_val"),
    "float16": ("DT_HALF", "half_val"),
    "bfloat16": ("DT_BFLOAT16", "half_val"),
    "int8": ("DT_INT8", "int_val"),
    "int16": ("DT_INT16", "int_val"),
    "int32": ("DT_INT32", "int_val"),
    "int64": ("DT_INT64", "int64_val"),
    "uint8": ("DT_UINT8", "int_val"),
    "uint16": ("DT_UINT16", "int_val"),
    "uint32": ("DT_UINT32", "uint32_val"),
    "uint64": ("DT_UINT64", "uint64_val"),
    "bool": ("DT_BOOL", "bool_val"),
    "string": ("DT_STRING", "string_val"),
    "complex64": ("DT_COMPLEX64", "scomplex_val"),
    "complex128": ("DT_COMPLEX128", "dcomplex_val"),
}
"""Canonical dtype name → TensorFlow ``DataType`` enum name and typed TensorProto field."""
if _TF_TYPES.keys() != DTYPE_NAMES:  # every canonical dtype needs a TensorProto encoding
    raise ImportError(f"TensorProto types {sorted(_TF_TYPES)} != dtypes {sorted(DTYPE_NAMES)}")

_TYPES = tuple(
    TensorType(name, types_pb2.DataType.Value(enum_name), dtypes.numpy_dtype(name), field)
    for name, (enum_name, field) in _TF_TYPES.items()
)
_BY_NAME = {spec.name: spec for spec in _TYPES}
_BY_DATA_TYPE: dict[int, TensorType] = {spec.data_type: spec for spec in _TYPES}
_BY_DTYPE = {spec.dtype: spec for spec in _TYPES}

STRING: Final = _BY_NAME["string"]
"""The string type: an object array of ``bytes``, values in ``string_val``."""
HALF_FIELD: Final = "half_val"
"""The field of float16 and bfloat16 values: their bit patterns as integers."""
COMPONENT: Final[dict[str, np.dtype[Any]]] = {
    "complex64": np.dtype(np.float32),
    "complex128": np.dtype(np.float64),
}
"""Complex dtype name → the dtype of each of its (real, imag) values in the typed field."""


def _enum_name(value: int) -> str:
    try:
        return types_pb2.DataType.Name(types_pb2.DataType.ValueType(value))
    except ValueError:
        return f"DataType {value}"


def lookup(value: int) -> TensorType:
    """The type of DataType enum ``value``; INVALID_ARGUMENT naming the enum if unsupported."""
    spec = _BY_DATA_TYPE.get(value)
    if spec is None:
        raise InvalidArgument(f"unsupported tensor dtype {_enum_name(value)}")
    return spec


def by_name(name: str) -> TensorType:
    """The type of a canonical name; INVALID_ARGUMENT listing the known names if unknown."""
    spec = _BY_NAME.get(name)
    if spec is None:
        raise InvalidArgument(f"unknown dtype name {name!r}; known: {', '.join(_BY_NAME)}")
    return spec


def for_numpy(dtype: np.dtype[Any]) -> TensorType:
    """The type of a numpy dtype, named as :func:`channel.dtypes.dtype_name` names it (either byte
    order; ``O``, ``S`` and ``U`` arrays: string); INVALID_ARGUMENT for a dtype no tensor has."""
    spec = _BY_DTYPE.get(dtype)  # a native dtype: one lookup
    if spec is not None:
        return spec
    try:
        return _BY_NAME[dtypes.dtype_name(dtype)]
    except ValueError:
        raise InvalidArgument(f"unsupported numpy dtype {dtype} for a tensor") from None


def canonical_name(data_type: int) -> str:
    """DataType enum value → canonical name; INVALID_ARGUMENT naming the enum if unsupported."""
    return lookup(data_type).name


def data_type(name: str) -> types_pb2.DataType.ValueType:
    """Canonical name → DataType enum value (an ``int``)."""
    return by_name(name).data_type


def data_type_name(name: str) -> str:
    """Canonical name → TensorFlow's DataType name (``float32`` → ``DT_FLOAT``)."""
    return types_pb2.DataType.Name(by_name(name).data_type)
