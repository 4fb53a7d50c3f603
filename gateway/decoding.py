"""The rules every protocol's tensor codec decodes input tensors by. Before any value is read:

- a tensor's rank is at most :data:`MAX_RANK`; its dimensions are not negative; its element
  count, and each single dimension (a zero beside a huge dimension is refused too), are at most
  ``max_elements`` (``--max_tensor_elements``) — INVALID_ARGUMENT;
- all of one request's decoded inputs take at most ``max_bytes`` (``--max_request_bytes``):
  elements × item size, a string element :data:`STRING_ELEMENT_BYTES` plus its own bytes —
  RESOURCE_EXHAUSTED.

Then, reading values: raw little-endian bytes hold exactly the declared elements (a bool is any
byte, non-zero is true); integers carried wider on the wire fit their dtype. Messages name no
input: a codec prefixes ``input 'x': ``.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from gateway.errors import InvalidArgument, ResourceExhausted

MAX_RANK = 64
"""Most dimensions a tensor may have (numpy's limit; TensorFlow allows 254)."""

STRING_ELEMENT_BYTES = 8 + sys.getsizeof(b"")
"""What one decoded string element costs besides its own bytes: a reference in the object array
and a ``bytes`` object's header (41 bytes on CPython 3.11, 64-bit)."""


T = TypeVar("T")


class Declared(NamedTuple, Generic[T]):
    """One input tensor as its header declares it, read without decoding any value."""

    name: str
    """The input's name ("" where the caller has none)."""
    wire_type: T
    """How the protocol names its dtype (TF Serving's ``TensorType``, V2's ``Datatype``: rows
    with a ``name``, which :func:`raw_values` and :func:`narrowed` say in messages)."""
    dtype: np.dtype[Any]
    """The decoded array's numpy dtype (``object`` for strings)."""
    shape: tuple[int, ...]
    elements: int
    nbytes: int
    """Bytes the decoded array may take (see the module docstring)."""


def _shape_text(dims: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def declare(
    name: str,
    wire_type: T,
    dtype: np.dtype[Any],
    dims: tuple[int, ...],
    string_bytes: int,
    max_elements: int,
) -> Declared[T]:
    """The header of one input, its shape checked against the bounds (INVALID_ARGUMENT).
    ``string_bytes``: the strings' own bytes when ``dtype`` is ``object`` (else unused)."""
    if len(dims) > MAX_RANK:
        raise InvalidArgument(f"tensor has {len(dims)} dimensions, over the limit of {MAX_RANK}")
    if dims and min(dims) < 0:
        raise InvalidArgument(f"tensor shape {_shape_text(dims)} has a negative dimension")
    count = math.prod(dims)
    if count > max_elements:
        raise InvalidArgument(
            f"tensor with shape {_shape_text(dims)} has {count} elements, "
            f"over the limit of {max_elements}"
        )
    if count == 0 and dims and max(dims) > max_elements:
        raise InvalidArgument(
            f"tensor with shape {_shape_text(dims)} has a dimension of {max(dims)}, "
            f"over the limit of {max_elements} elements"
        )
    if dtype.hasobject:
        nbytes = count * STRING_ELEMENT_BYTES + string_bytes
    else:
        nbytes = count * dtype.itemsize
    return Declared(name, wire_type, dtype, dims, count, nbytes)


def check_total(total: int, max_bytes: int | None) -> None:
    """RESOURCE_EXHAUSTED when a request's decoded inputs (``total`` bytes, or at least that
    many) would exceed ``max_bytes`` (None: no bound)."""
    if max_bytes is not None and total > max_bytes:
        raise ResourceExhausted(
            f"the request's input tensors would take at least {total} bytes once decoded, over "
            f"the limit of {max_bytes} bytes (--max_request_bytes)"
        )


def raw_values(data: bytes | memoryview, header: Declared[Any]) -> npt.NDArray[Any]:
    """A fixed-size tensor's raw little-endian bytes as a flat, read-only, zero-copy array;
    INVALID_ARGUMENT unless they hold exactly the declared elements. A bool byte other than 0
    is true (the array is then a new one of real booleans)."""
    dtype = header.dtype
    expected = header.elements * dtype.itemsize
    if len(data) != expected:
        raise InvalidArgument(
            f"expected {expected} bytes of {header.wire_type.name} data for shape "
            f"{_shape_text(header.shape)}, got {len(data)}"
        )
    flat = np.frombuffer(data, dtype=dtype)
    if dtype == np.bool_:
        raw = flat.view(np.uint8)
        if raw.size and raw.max() > 1:
            return np.not_equal(raw, 0)
    return flat


def narrowed(
    values: Any, target: np.dtype[Any], header: Declared[Any], what: str
) -> npt.NDArray[Any]:
    """The integers of a wider typed field as ``target``; INVALID_ARGUMENT for any value out of
    its range (``what`` names the values: ``int_val``)."""
    wide = np.array(values, dtype=np.int64)
    info = np.iinfo(target)
    bad = wide[(wide < info.min) | (wide > info.max)]
    if bad.size:
        raise InvalidArgument(
            f"{what} value {bad[0]} is out of range for {header.wire_type.name} "
            f"[{info.min}, {info.max}]"
        )
    return wide.astype(target)


def encodable_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (JSON's ``\\ud800`` escapes decode to lone surrogates,
    which do not)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
