"""Tensor payloads in a channel's shared-memory areas: how one tensor's bytes are laid out.

A payload is named by a :class:`channel.descriptors.TensorDesc` (dtype, shape, offset, nbytes)
in a run request or reply. Payloads are C-contiguous, native little-endian. Fixed-size dtypes
are the raw elements; a string tensor is packed as ``uint64 count``, ``count x uint64 lengths``,
then the concatenated bytes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from channel.descriptors import TensorDesc
from channel.dtypes import NUMPY_DTYPES, STRING, string_items


def tensor_nbytes(arr: np.ndarray[Any, Any]) -> int:
    """Bytes that :func:`write_tensor` needs for ``arr``."""
    if arr.dtype.kind in "OSU":
        items = string_items(arr)
        return 8 * (1 + len(items)) + sum(map(len, items))
    return int(arr.nbytes)


def write_tensor(view: memoryview, arr: np.ndarray[Any, Any]) -> None:
    """Write ``arr``'s payload at the start of ``view`` (one copy); ValueError if it does not fit.

    Numeric arrays may be non-contiguous or big-endian; they are converted while copying.
    """
    if arr.dtype.kind in "OSU":
        items = string_items(arr)
        head = 8 * (1 + len(items))
        total = head + sum(map(len, items))
        if total > len(view):
            raise ValueError(f"string tensor needs {total} bytes, view has {len(view)}")
        lengths = np.frombuffer(view, dtype="<u8", count=1 + len(items))
        lengths[0] = len(items)
        lengths[1:] = [len(item) for item in items]
        view[head:total] = b"".join(items)
        return
    if arr.nbytes > len(view):
        raise ValueError(f"tensor needs {arr.nbytes} bytes, view has {len(view)}")
    if arr.dtype.isnative and arr.flags.c_contiguous:
        view[: arr.nbytes] = arr.reshape(-1).view(np.uint8).data
        return
    if arr.size == 0:
        return
    dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
    dst = np.frombuffer(view, dtype=dtype, count=arr.size).reshape(arr.shape)
    np.copyto(dst, arr, casting="no" if dtype == arr.dtype else "equiv")


def read_tensor(
    view: memoryview, dtype: str, shape: list[int] | tuple[int, ...]
) -> np.ndarray[Any, Any]:
    """The tensor stored at the start of ``view``.

    Fixed-size dtypes give a zero-copy array over ``view`` (writable if the view is); ``string``
    gives a fresh object array of ``bytes``. ValueError if the payload does not match
    ``shape`` or overruns ``view``.
    """
    return tensor_at(view, TensorDesc("", dtype, tuple(shape), 0, len(view)))


def tensor_at(area: memoryview, desc: TensorDesc) -> np.ndarray[Any, Any]:
    """The tensor ``desc`` names in ``area`` (a whole data area), as :func:`read_tensor` reads
    it; ValueError also when the block ``desc`` names lies outside ``area``. The run paths read
    every tensor through here: a fixed-size one is one numpy call over the area (no view of the
    block is cut first)."""
    _, dtype, shape, offset, nbytes = desc
    if offset < 0 or nbytes < 0 or offset + nbytes > len(area):
        raise ValueError(
            f"block [{offset}, {offset + nbytes}) lies outside an area of {len(area)} bytes"
        )
    if shape and min(shape) < 0:
        raise ValueError(f"shape {list(shape)} has a negative dimension")
    count = math.prod(shape)
    if dtype == STRING:
        return _read_strings(area[offset : offset + nbytes], count).reshape(shape)
    np_dtype = NUMPY_DTYPES.get(dtype)
    if np_dtype is None:
        raise ValueError(f"unknown dtype {dtype!r}")
    need = count * np_dtype.itemsize
    if need > nbytes:
        raise ValueError(f"{dtype}{list(shape)} needs {need} bytes, view has {nbytes}")
    return np.frombuffer(area, dtype=np_dtype, count=count, offset=offset).reshape(shape)


def _read_strings(view: memoryview, count: int) -> np.ndarray[Any, Any]:
    head = 8 * (1 + count)
    if head > len(view):
        raise ValueError(f"string tensor of {count} elements overruns its {len(view)} bytes")
    lengths = np.frombuffer(view, dtype="<u8", count=1 + count).tolist()
    if lengths[0] != count:
        raise ValueError(f"string tensor holds {lengths[0]} elements, shape says {count}")
    total = head + sum(lengths[1:])
    if total > len(view):
        raise ValueError(f"string tensor of {total} bytes overruns its {len(view)} bytes")
    data = view[head:total].tobytes()
    out = np.empty(count, dtype=object)
    start = 0
    for i, length in enumerate(lengths[1:]):
        out[i] = data[start : start + length]
        start += length
    return out
