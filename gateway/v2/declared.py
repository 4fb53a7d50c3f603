"""What a V2 request's input tensors declare, and its bounds, checked before any value is read.

Both wire forms (gRPC ``ModelInferRequest``, REST JSON) hand the core a :class:`DeclaredInputs`
(a :class:`gateway.serving.inputs.Decoded`): each input's header (name, datatype, shape) becomes a
:class:`Declared` as the core asks for it, bounded as TF Serving's codec bounds a TensorProto:

- ``max_elements`` (``--max_tensor_elements``): a tensor's element count, and each single
  dimension (so a zero beside a huge dimension is refused too) — INVALID_ARGUMENT;
- ``max_bytes`` (``--max_request_bytes``): the bytes all decoded inputs would take, a BYTES
  element counting its 8-byte reference and a ``bytes`` header (:data:`STRING_ELEMENT_BYTES`)
  plus its own bytes — RESOURCE_EXHAUSTED.

The core validates names, dtypes and shapes against the signature once
(:func:`gateway.serving.inputs.validated`); only then are values converted. An input named twice
is refused here (INVALID_ARGUMENT): the core sees names as a set.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np

from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.serving.inputs import Header
from gateway.v2 import datatypes
from gateway.v2.datatypes import Datatype

P = TypeVar("P")

MAX_RANK = 64
"""Most dimensions a tensor may have (numpy's limit)."""

STRING_ELEMENT_BYTES = 8 + sys.getsizeof(b"")
"""What one decoded BYTES element costs besides its own bytes (an object array's reference and
a ``bytes`` object's header)."""


@dataclass(frozen=True)
class Limits:
    """The decoding bounds of one request (see the module docstring)."""

    max_elements: int
    max_bytes: int | None = None
    """None: no bound on the decoded bytes."""


class Declared(NamedTuple):
    """One input's header: name, datatype row, shape and element count."""

    name: str
    datatype: Datatype
    shape: tuple[int, ...]
    elements: int


def declare(name: str, datatype: str, shape: Sequence[int], limits: Limits) -> Declared:
    """Check one input's header; INVALID_ARGUMENT naming the input for an unknown datatype, a
    negative dimension, a rank over :data:`MAX_RANK` or a size over ``limits.max_elements``."""
    try:
        row = datatypes.lookup(datatype)
    except InvalidArgument as exc:
        raise InvalidArgument(f"input '{name}': {exc.message}") from None
    dims = tuple(shape)
    if len(dims) > MAX_RANK:
        raise InvalidArgument(f"input '{name}' has {len(dims)} dimensions, over {MAX_RANK}")
    if any(size < 0 for size in dims):
        raise InvalidArgument(f"input '{name}' has a negative dimension in shape {list(dims)}")
    count = math.prod(dims)
    if count > limits.max_elements or any(size > limits.max_elements for size in dims):
        raise InvalidArgument(
            f"input '{name}' with shape {list(dims)} has {count} elements, over the limit of "
            f"{limits.max_elements} (and so may no dimension)"
        )
    return Declared(name, row, dims, count)


def decoded_bytes(declared: Declared, wire_bytes: int) -> int:
    """Bytes the decoded array takes: elements × item size, or for BYTES each element's
    overhead plus ``wire_bytes`` (the strings' own bytes, bounded by the message)."""
    if declared.datatype.itemsize:
        return declared.elements * declared.datatype.itemsize
    return declared.elements * STRING_ELEMENT_BYTES + wire_bytes


def check_total(total: int, limits: Limits) -> None:
    """RESOURCE_EXHAUSTED when the request's decoded inputs would exceed ``limits.max_bytes``."""
    if limits.max_bytes is not None and total > limits.max_bytes:
        raise ResourceExhausted(
            f"the request's input tensors would take {total} bytes once decoded, over the limit "
            f"of {limits.max_bytes} bytes (--max_request_bytes)"
        )


@dataclass(frozen=True, slots=True)
class Wire(Generic[P]):
    """One input as its wire form gives it: the header's fields and its payload (raw bytes,
    typed contents, JSON ``data``: whatever the codec's ``convert`` takes)."""

    name: str
    datatype: str
    shape: Sequence[int]
    payload: P


class DeclaredInputs(Generic[P]):
    """One request's inputs for the core (:class:`gateway.serving.inputs.Decoded`).

    ``wire_bytes(header, payload)``: the bytes a payload holds beyond fixed-size elements (a
    BYTES tensor's strings); ``convert(header, payload)``: the array, of exactly the header's
    datatype and shape (INVALID_ARGUMENT for values that do not fit it)."""

    __slots__ = ("_convert", "_declared", "_limits", "_wire", "_wire_bytes")

    def __init__(
        self,
        wire: Sequence[Wire[P]],
        limits: Limits,
        wire_bytes: Callable[[Declared, P], int],
        convert: Callable[[Declared, P], np.ndarray],
    ) -> None:
        seen: set[str] = set()
        for item in wire:
            if item.name in seen:
                raise InvalidArgument(f"input '{item.name}' is given more than once")
            seen.add(item.name)
        self._wire = wire
        self._limits = limits
        self._wire_bytes = wire_bytes
        self._convert = convert
        self._declared: list[Declared] = []

    @property
    def names(self) -> Collection[str]:
        return [item.name for item in self._wire]

    def headers(self) -> Iterator[Header]:
        declared: list[Declared] = []
        total = 0
        for item in self._wire:
            header = declare(item.name, item.datatype, item.shape, self._limits)
            declared.append(header)
            total += decoded_bytes(header, self._wire_bytes(header, item.payload))
            yield header.name, header.datatype.dtype_name, header.shape
        check_total(total, self._limits)
        self._declared = declared

    def arrays(self) -> dict[str, Any]:
        if len(self._declared) != len(self._wire):  # headers() not run to its end: run it
            list(self.headers())
        return {
            header.name: self._convert(header, item.payload)
            for header, item in zip(self._declared, self._wire, strict=True)
        }
