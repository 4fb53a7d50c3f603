"""The one table of tensor dtypes: canonical names ⇄ numpy dtypes.

Canonical names (``"float32"``, ..., ``"string"``) are what descriptors, signatures and the REST
and tensor codecs speak; every other table (TensorFlow's ``DataType`` enum, ONNX Runtime's type
strings) is keyed by these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import ml_dtypes
import numpy as np

STRING: Final = "string"


_DTYPES: Final[dict[str, np.dtype[Any]]] = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "bool": np.dtype(np.bool_),
    STRING: np.dtype(object),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}
_NAMES: Final[dict[np.dtype[Any], str]] = {dt: name for name, dt in _DTYPES.items()}

DTYPE_NAMES: Final = frozenset(_DTYPES)
"""Every canonical dtype name."""

NUMPY_DTYPES: Final[Mapping[str, np.dtype[Any]]] = MappingProxyType(_DTYPES)
"""Canonical name → numpy dtype, as :func:`numpy_dtype` (a lookup for the run paths, which know
their names are canonical: no call, KeyError for an unknown name)."""

CANONICAL_NAMES: Final[Mapping[np.dtype[Any], str]] = MappingProxyType(_NAMES)
"""Native numpy dtype → canonical name (a lookup for the run paths; :func:`dtype_name` also
names byte-swapped dtypes and numpy's ``S``/``U`` kinds)."""


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The numpy dtype for a canonical name (``string`` is ``object``); ValueError if unknown."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}") from None


def string_items(array: np.ndarray[Any, Any]) -> list[bytes]:
    """The elements of a string tensor as ``bytes``, row-major (``str`` encoded as UTF-8);
    TypeError naming any other element's type."""
    items: list[bytes] = []
    for item in array.reshape(-1).tolist():
        if isinstance(item, bytes):
            items.append(item)
        elif isinstance(item, str):
            items.append(item.encode())
        else:
            raise TypeError(
                f"string tensor element of type {type(item).__name__}, expected bytes or str"
            )
    return items


def dtype_name(dtype: np.dtype[Any]) -> str:
    """The canonical name of a numpy dtype; ``object`` and numpy's ``S``/``U`` kinds are
    ``string``. ValueError for anything else without a name."""
    name = _NAMES.get(dtype.newbyteorder("=") if dtype.byteorder == ">" else dtype)
    if name is not None:
        return name
    if dtype.kind in "SU":
        return STRING
    raise ValueError(f"dtype {dtype} has no canonical name")
