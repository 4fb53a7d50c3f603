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

from gateway.errors import InvalidArgument
from gateway.v2.datatypes import BYTES, Datatype
from gateway.v2.declared import Declared

if sys.byteorder != "little":  # pragma: no cover - no big-endian deployment target exists
    raise ImportError("gateway.v2.raw assumes a little-endian host")

_LENGTH = struct.Struct("<I")
MAX_ELEMENT_BYTES = 2**32 - 1
"""The longest BYTES element the 4-byte length prefix can describe."""


def from_raw(data: bytes | memoryview, declared: Declared) -> npt.NDArray[Any]:
    """Decode one input's raw bytes into an array of its declared shape."""
    row = declared.datatype
    if row.name == BYTES:
        flat = _bytes_elements(memoryview(data), declared)
    else:
        expected = declared.elements * row.itemsize
        if len(data) != expected:
            raise InvalidArgument(
                f"input '{declared.name}': expected {expected} bytes of {row.name} data for "
                f"shape {list(declared.shape)}, got {len(data)}"
            )
        flat = np.frombuffer(data, dtype=row.numpy)
        if row.name == "BOOL":
            raw = flat.view(np.uint8)
            if raw.size and raw.max() > 1:  # any non-zero byte is true
                flat = np.not_equal(raw, 0)
    return flat.reshape(declared.shape)


def _bytes_elements(view: memoryview, declared: Declared) -> npt.NDArray[Any]:
    flat = np.empty(declared.elements, dtype=object)
    pos = 0
    for index in range(declared.elements):
        if pos + _LENGTH.size > len(view):
            raise InvalidArgument(
                f"input '{declared.name}': BYTES data ends at element {index} of "
                f"{declared.elements} (each element is a 4-byte length, then its bytes)"
            )
        (size,) = _LENGTH.unpack_from(view, pos)
        pos += _LENGTH.size
        if pos + size > len(view):
            raise InvalidArgument(
                f"input '{declared.name}': BYTES element {index} declares {size} bytes, "
                f"only {len(view) - pos} follow"
            )
        flat[index] = bytes(view[pos : pos + size])
        pos += size
    if pos != len(view):
        raise InvalidArgument(
            f"input '{declared.name}': {len(view) - pos} bytes follow the {declared.elements} "
            f"BYTES elements of shape {list(declared.shape)}"
        )
    return flat


def to_raw(array: npt.NDArray[Any], row: Datatype) -> bytes:
    """Encode ``array`` (any layout or byte order) as ``row``'s raw bytes. BYTES elements may be
    ``bytes`` or ``str`` (UTF-8); INVALID_ARGUMENT for anything else or one over 4 GiB."""
    if row.name != BYTES:
        return np.ascontiguousarray(array, dtype=row.numpy).tobytes()
    parts: list[bytes] = []
    for item in bytes_items(array):
        if len(item) > MAX_ELEMENT_BYTES:
            raise InvalidArgument(f"a BYTES element of {len(item)} bytes is over 4 GiB")
        parts += (_LENGTH.pack(len(item)), item)
    return b"".join(parts)


def bytes_items(array: npt.NDArray[Any]) -> list[bytes]:
    """The elements of a BYTES tensor as ``bytes``, row-major (``str`` encoded as UTF-8)."""
    items = []
    for item in np.asarray(array).ravel().tolist():
        if isinstance(item, bytes):
            items.append(item)
        elif isinstance(item, str):
            items.append(item.encode())
        else:
            raise InvalidArgument(
                f"BYTES tensor element of type {type(item).__name__}, expected bytes or str"
            )
    return items
