"""V2 datatypes ⇄ the canonical dtype names of :mod:`channel.dtypes` ⇄ numpy: the one table.

=========  =========  ===========  =====  ==================================
V2         canonical  numpy        bytes  typed field (``InferTensorContents``)
=========  =========  ===========  =====  ==================================
BOOL       bool       bool_        1      ``bool_contents``
UINT8      uint8      uint8        1      ``uint_contents``
UINT16     uint16     uint16       2      ``uint_contents``
UINT32     uint32     uint32       4      ``uint_contents``
UINT64     uint64     uint64       8      ``uint64_contents``
INT8       int8       int8         1      ``int_contents``
INT16      int16      int16        2      ``int_contents``
INT32      int32      int32        4      ``int_contents``
INT64      int64      int64        8      ``int64_contents``
FP16       float16    float16      2      none: raw bytes only (the protocol's rule)
BF16       bfloat16   ml_dtypes    2      none: raw bytes only (Triton's extension)
FP32       float32    float32      4      ``fp32_contents``
FP64       float64    float64      8      ``fp64_contents``
BYTES      string     object       var.   ``bytes_contents`` (raw: 4-byte LE length + bytes)
=========  =========  ===========  =====  ==================================

``complex64`` and ``complex128`` have no V2 datatype: a model tensor of those dtypes cannot be
carried (UNIMPLEMENTED). An unknown datatype string in a request is INVALID_ARGUMENT.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import numpy as np

from channel import dtypes
from gateway.errors import InvalidArgument, Unimplemented

BYTES: Final = "BYTES"


class Datatype(NamedTuple):
    """One row of the table."""

    name: str
    """The V2 datatype string (``"FP32"``)."""
    dtype_name: str
    """The canonical dtype name (``"float32"``)."""
    numpy: np.dtype[Any]
    itemsize: int
    """Bytes per element in raw form; 0 for BYTES (variable)."""
    field: str | None
    """The typed ``InferTensorContents`` field; None when the datatype travels only raw."""


_ROWS: Final = (
    ("BOOL", "bool", "bool_contents"),
    ("UINT8", "uint8", "uint_contents"),
    ("UINT16", "uint16", "uint_contents"),
    ("UINT32", "uint32", "uint_contents"),
    ("UINT64", "uint64", "uint64_contents"),
    ("INT8", "int8", "int_contents"),
    ("INT16", "int16", "int_contents"),
    ("INT32", "int32", "int_contents"),
    ("INT64", "int64", "int64_contents"),
    ("FP16", "float16", None),
    ("BF16", "bfloat16", None),
    ("FP32", "float32", "fp32_contents"),
    ("FP64", "float64", "fp64_contents"),
    (BYTES, dtypes.STRING, "bytes_contents"),
)

_BY_NAME: Final = {
    name: Datatype(
        name,
        canonical,
        dtypes.numpy_dtype(canonical),
        0 if name == BYTES else dtypes.numpy_dtype(canonical).itemsize,
        field,
    )
    for name, canonical, field in _ROWS
}
_BY_DTYPE_NAME: Final = {row.dtype_name: row for row in _BY_NAME.values()}
_FAST: Final = {name: row for name, row in _BY_NAME.items() if name not in ("BOOL", "BYTES")}

DATATYPES: Final = tuple(_BY_NAME)
"""Every V2 datatype tensorgate carries, in the table's order."""


def lookup(name: str) -> Datatype:
    """The row of a V2 datatype string (case-sensitive, as the protocol); INVALID_ARGUMENT if
    unknown."""
    row = _BY_NAME.get(name)
    if row is None:
        raise InvalidArgument(f"invalid datatype '{name}'; known: {', '.join(DATATYPES)}")
    return row


def fast_row(name: str) -> Datatype | None:
    """The row of a V2 datatype string of a fixed-size numeric datatype (the short path's), or
    None (BOOL, BYTES, and anything unknown)."""
    return _FAST.get(name)


def for_dtype_name(dtype_name: str) -> Datatype:
    """The row of a canonical dtype name; UNIMPLEMENTED for a dtype V2 cannot carry."""
    row = _BY_DTYPE_NAME.get(dtype_name)
    if row is None:
        raise Unimplemented(f"dtype {dtype_name} has no Open Inference Protocol datatype")
    return row


def for_numpy(dtype: np.dtype[Any]) -> Datatype:
    """The row of a numpy dtype (``object``, ``S`` and ``U`` are BYTES); UNIMPLEMENTED for one
    V2 cannot carry."""
    try:
        name = dtypes.dtype_name(dtype)
    except ValueError:
        raise Unimplemented(f"dtype {dtype} has no Open Inference Protocol datatype") from None
    return for_dtype_name(name)


def datatype_of(dtype_name: str) -> str:
    """Canonical dtype name → V2 datatype string (``"float32"`` → ``"FP32"``)."""
    return for_dtype_name(dtype_name).name
