"""TensorProto → numpy, following TensorFlow's ``Tensor::FromProto``, bounded before anything is
allocated.

A non-empty ``tensor_content`` (raw little-endian bytes) wins over the typed fields; otherwise the
typed field of the dtype is read, a list shorter than the element count repeats its last value
and an empty list means zeros (empty bytes for strings). Stricter than TensorFlow, which silently
truncates: a typed list longer than the element count, a ``tensor_content`` of the wrong length,
and ``int_val`` / ``half_val`` values out of their dtype's range are INVALID_ARGUMENT. The
declared element count is checked against the caller's bound before anything is allocated
(:func:`declared`).
"""

from __future__ import annotations

import math
import sys
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.errors import InvalidArgument
from gateway.tfserving.codec.tensor_types import COMPONENT, HALF_FIELD, STRING, TensorType, lookup

MAX_RANK = 64
"""Most dimensions a tensor may have (numpy's limit; TensorFlow allows 254)."""

STRING_ELEMENT_BYTES = 8 + sys.getsizeof(b"")
"""What one decoded string element costs besides its own bytes: a reference in the object array
and a ``bytes`` object's header (41 bytes on CPython 3.11, 64-bit)."""


def _shape_text(dims: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def shape_of(proto: TensorProto) -> tuple[int, ...]:
    """The tensor's dimensions; INVALID_ARGUMENT for unknown rank, negative dims or rank > 64."""
    shape = proto.tensor_shape
    dims = tuple([dim.size for dim in shape.dim])
    if shape.unknown_rank:
        raise InvalidArgument("tensor shape has unknown rank; a tensor needs a fully defined shape")
    if len(dims) > MAX_RANK:
        raise InvalidArgument(f"tensor has {len(dims)} dimensions, over the limit of {MAX_RANK}")
    if dims and min(dims) < 0:
        raise InvalidArgument(f"tensor shape {_shape_text(dims)} has a negative dimension")
    return dims


class Declared(NamedTuple):
    """What a TensorProto says it holds, read without decoding any value."""

    dtype: str
    """Canonical dtype name."""
    shape: tuple[int, ...]
    nbytes: int
    """Bytes the decoded array may take: elements × item size; a string element counts as its
    8-byte reference plus a ``bytes`` object's header (:data:`STRING_ELEMENT_BYTES` in all), and
    the strings' own bytes count once (bounded by the message's size)."""
    elements: int
    spec: TensorType


def declared(proto: TensorProto, *, max_elements: int) -> Declared:
    """Dtype, shape and decoded size of ``proto``, checked against ``max_elements`` (for the
    element count and for every single dimension, so that a zero beside a huge dimension is
    refused too). INVALID_ARGUMENT for an unsupported dtype or a shape out of bounds."""
    spec = lookup(proto.dtype)
    shape = shape_of(proto)
    count = math.prod(shape)
    if count > max_elements:
        raise InvalidArgument(
            f"tensor with shape {_shape_text(shape)} has {count} elements, "
            f"over the limit of {max_elements}"
        )
    if count == 0 and shape and max(shape) > max_elements:
        raise InvalidArgument(
            f"tensor with shape {_shape_text(shape)} has a dimension of {max(shape)}, "
            f"over the limit of {max_elements} elements"
        )
    if spec is STRING:
        nbytes = count * STRING_ELEMENT_BYTES + proto.ByteSize()
    else:
        nbytes = count * spec.dtype.itemsize
    return Declared(spec.name, shape, nbytes, count, spec)


def to_ndarray(proto: TensorProto, *, max_elements: int) -> npt.NDArray[Any]:
    """Decode ``proto``; its declared element count (and each dimension) must not exceed
    ``max_elements`` (see :func:`declared`).

    ``tensor_content`` comes back as a zero-copy, read-only view of the bytes; typed fields as a
    new array. Callers must not write into the result. Errors are INVALID_ARGUMENT.
    """
    return values(proto, declared(proto, max_elements=max_elements))


def values(proto: TensorProto, header: Declared) -> npt.NDArray[Any]:
    """The values of ``proto``, as :func:`declared` read its ``header`` (no second check)."""
    content = proto.tensor_content  # upb copies bytes on every access: read once
    spec, count = header.spec, header.elements
    flat = _from_content(spec, content, count) if content else _from_typed(spec, proto, count)
    return flat.reshape(header.shape)


def _from_content(spec: TensorType, content: bytes, count: int) -> npt.NDArray[Any]:
    if spec is STRING:
        return _decode_string_list(content, count)
    expected = count * spec.dtype.itemsize
    if len(content) != expected:
        raise InvalidArgument(
            f"tensor_content of a {spec.name} tensor with {count} elements must be "
            f"{expected} bytes, got {len(content)}"
        )
    flat = np.frombuffer(content, dtype=spec.dtype)
    if spec.name == "bool":
        raw = flat.view(np.uint8)
        if raw.size and raw.max() > 1:  # normalise odd byte values to real booleans
            return np.not_equal(raw, 0)
    return flat


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 35:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    raise InvalidArgument("tensor_content of a string tensor has a truncated length prefix")


def _decode_string_list(content: bytes, count: int) -> npt.NDArray[Any]:
    """TensorFlow's string ``tensor_content``: ``count`` varint32 lengths, then the bytes."""
    sizes = []
    pos = 0
    for _ in range(count):
        size, pos = _read_varint(content, pos)
        sizes.append(size)
    if pos + sum(sizes) != len(content):
        raise InvalidArgument(
            f"tensor_content of a string tensor declares {sum(sizes)} bytes of strings, "
            f"has {len(content) - pos}"
        )
    flat = np.empty(count, dtype=object)
    for index, size in enumerate(sizes):
        flat[index] = content[pos : pos + size]
        pos += size
    return flat


def _from_typed(spec: TensorType, proto: TensorProto, count: int) -> npt.NDArray[Any]:
    values = getattr(proto, spec.field)
    have = len(values)
    component = COMPONENT.get(spec.name)
    if component is not None:
        if have % 2:
            raise InvalidArgument(f"{spec.field} holds {have} values, not (real, imag) pairs")
        have //= 2
    if have > count:
        raise InvalidArgument(
            f"{spec.field} holds {have} values, more than the {count} elements of the tensor"
        )
    if have == 0:
        if spec is STRING:
            return np.full(count, b"", dtype=object)
        return np.zeros(count, dtype=spec.dtype)
    flat: npt.NDArray[Any]
    if spec is STRING:
        flat = np.empty(have, dtype=object)
        flat[:] = list(values)
    elif component is not None:
        flat = np.array(values, dtype=component).view(spec.dtype)
    elif spec.field == HALF_FIELD:
        flat = _checked_ints(values, np.dtype(np.uint16), spec).view(spec.dtype)
    elif spec.field == "int_val" and spec.dtype != np.int32:
        flat = _checked_ints(values, spec.dtype, spec)
    else:
        flat = np.array(values, dtype=spec.dtype)
    if have < count:  # repeat the last value, bit for bit
        flat = np.concatenate((flat, np.broadcast_to(flat[-1:], (count - have,))))
    return flat


def _checked_ints(values: Any, target: np.dtype[Any], spec: TensorType) -> npt.NDArray[Any]:
    """int32 field values narrowed to ``target``; INVALID_ARGUMENT for any value out of range."""
    ints = np.array(values, dtype=np.int32)
    info = np.iinfo(target)
    bad = ints[(ints < info.min) | (ints > info.max)]
    if bad.size:
        raise InvalidArgument(
            f"{spec.field} value {bad[0]} is out of range for a {spec.name} tensor "
            f"[{info.min}, {info.max}]"
        )
    return ints.astype(target)
