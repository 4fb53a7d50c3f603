"""Raw tensor bytes ⇄ numpy: the layout of gRPC ``raw_input_contents`` / ``raw_output_contents``
and of the REST binary data extension (one layout for both).

A tensor's raw form is its elements flattened in row-major order, little-endian, without stride
or padding; BOOL is one byte per element (0 false, anything else true); a BYTES element is a
4-byte little-endian unsigned length followed by that many bytes::

    INT32 [2]          → 01 00 00 00  02 00 00 00
    BYTES ["ab", ""]   → 02 00 00 00 61 62  00 00 00 00

Decoding checks the size exactly (INVALID_ARGUMENT naming the input) and returns a read-only,
zero-copy view for fixed-size datatypes; BYTES become an object array of ``bytes``.
"""

from __future__ import annotations

import struct
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from channel.dtypes import string_items
from gateway.decoding import Declared, raw_values
from gateway.errors import InvalidArgument
from gateway.v2.datatypes import BYTES, Datatype

if sys.byteorder != "little":  # pragma: no cover - no big-endian deployment target exists
    raise ImportError("gateway.v2.raw assumes a little-endian host")

_LENGTH = struct.Struct("<I")
MAX_ELEMENT_BYTES = 2**32 - 1
"""The longest BYTES element the 4-byte length prefix can describe."""


def from_raw(declared: Declared[Datatype], data: bytes | memoryview) -> npt.NDArray[Any]:
    """Decode one input's raw bytes into an array of its declared shape."""
    try:
        if declared.wire_type.name == BYTES:
            flat = _bytes_elements(memoryview(data), declared)
        else:
            flat = raw_values(data, declared)
    except InvalidArgument as exc:
        raise InvalidArgument(f"input '{declared.name}': {exc.message}") from None
    return flat.reshape(declared.shape)


def _bytes_elements(view: memoryview, declared: Declared[Datatype]) -> npt.NDArray[Any]:
    flat = np.empty(declared.elements, dtype=object)
    pos = 0
    for index in range(declared.elements):
        if pos + _LENGTH.size > len(view):
            raise InvalidArgument(
                f"BYTES data ends at element {index} of {declared.elements} (each element is "
                "a 4-byte length, then its bytes)"
            )
        (size,) = _LENGTH.unpack_from(view, pos)
        pos += _LENGTH.size
        if pos + size > len(view):
            raise InvalidArgument(
                f"BYTES element {index} declares {size} bytes, only {len(view) - pos} follow"
            )
        flat[index] = bytes(view[pos : pos + size])
        pos += size
    if pos != len(view):
        raise InvalidArgument(
            f"{len(view) - pos} bytes follow the {declared.elements} BYTES elements of shape "
            f"{list(declared.shape)}"
        )
    return flat


def to_raw(array: npt.NDArray[Any], row: Datatype) -> bytes:
    """Encode ``array`` (any layout or byte order) as ``row``'s raw bytes. BYTES elements may be
    ``bytes`` or ``str`` (UTF-8); INVALID_ARGUMENT for anything else or one over 4 GiB."""
    if row.name != BYTES:
        return np.ascontiguousarray(array, dtype=row.numpy).tobytes()
    try:
        items = string_items(array)
    except TypeError as exc:
        raise InvalidArgument(str(exc)) from None
    parts: list[bytes] = []
    for item in items:
        if len(item) > MAX_ELEMENT_BYTES:
            raise InvalidArgument(f"a BYTES element of {len(item)} bytes is over 4 GiB")
        parts += (_LENGTH.pack(len(item)), item)
    return b"".join(parts)
