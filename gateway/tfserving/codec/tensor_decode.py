"""TensorProto → numpy, following TensorFlow's ``Tensor::FromProto``, bounded before anything is
allocated (:mod:`gateway.decoding`'s rules).

A non-empty ``tensor_content`` (raw little-endian bytes) wins over the typed fields; otherwise the
typed field of the dtype is read, a list shorter than the element count repeats its last value
and an empty list means zeros (empty bytes for strings). Stricter than TensorFlow, which silently
truncates: a typed list longer than the element count, a ``tensor_content`` of the wrong length,
and ``int_val`` / ``half_val`` values out of their dtype's range are INVALID_ARGUMENT.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.decoding import Declared, declare, narrowed, raw_values
from gateway.errors import InvalidArgument
from gateway.proto_wire import read_varint
from gateway.tfserving.codec.tensor_types import COMPONENT, HALF_FIELD, STRING, TensorType, lookup


def declared(proto: TensorProto, *, max_elements: int, name: str = "") -> Declared[TensorType]:
    """The header of ``proto`` (no value decoded), its shape within ``max_elements``
    (:func:`gateway.decoding.declare`; a string tensor's own bytes count as the message's size).
    INVALID_ARGUMENT for an unsupported dtype, an unknown rank or a shape out of bounds."""
    spec = lookup(proto.dtype)
    shape = proto.tensor_shape
    if shape.unknown_rank:
        raise InvalidArgument("tensor shape has unknown rank; a tensor needs a fully defined shape")
    dims = tuple([dim.size for dim in shape.dim])
    string_bytes = proto.ByteSize() if spec is STRING else 0
    return declare(name, spec, spec.dtype, dims, string_bytes, max_elements)


def to_ndarray(proto: TensorProto, *, max_elements: int) -> npt.NDArray[Any]:
    """Decode ``proto``; its declared element count (and each dimension) must not exceed
    ``max_elements`` (see :func:`declared`).

    ``tensor_content`` comes back as a zero-copy, read-only view of the bytes; typed fields as a
    new array. Callers must not write into the result. Errors are INVALID_ARGUMENT.
    """
    return values(proto, declared(proto, max_elements=max_elements))


def values(proto: TensorProto, header: Declared[TensorType]) -> npt.NDArray[Any]:
    """The values of ``proto``, as :func:`declared` read its ``header`` (no second check)."""
    content = proto.tensor_content  # upb copies bytes on every access: read once
    if not content:
        flat = _from_typed(proto, header)
    elif header.wire_type is STRING:
        flat = _decode_string_list(content, header.elements)
    else:
        flat = raw_values(content, header)
    return flat.reshape(header.shape)


def _decode_string_list(content: bytes, count: int) -> npt.NDArray[Any]:
    """TensorFlow's string ``tensor_content``: ``count`` varint32 lengths, then the bytes."""
    sizes = []
    pos = 0
    try:
        for _ in range(count):
            size, pos = read_varint(content, pos)
            sizes.append(size)
    except ValueError:
        raise InvalidArgument(
            "tensor_content of a string tensor has a truncated length prefix"
        ) from None
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


def _from_typed(proto: TensorProto, header: Declared[TensorType]) -> npt.NDArray[Any]:
    spec, count = header.wire_type, header.elements
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
        flat = narrowed(values, np.dtype(np.uint16), header, spec.field).view(spec.dtype)
    elif spec.field == "int_val" and spec.dtype != np.int32:
        flat = narrowed(values, spec.dtype, header, spec.field)
    else:
        flat = np.array(values, dtype=spec.dtype)
    if have < count:  # repeat the last value, bit for bit
        flat = np.concatenate((flat, np.broadcast_to(flat[-1:], (count - have,))))
    return flat
