"""What a V2 request's input tensors declare, checked before any value is read.

Both wire forms (gRPC ``ModelInferRequest``, REST JSON) hand the core a :class:`DeclaredInputs`
(a :class:`gateway.serving.inputs.Decoded`): each input's header (name, datatype, shape) becomes a
:class:`gateway.decoding.Declared` as the core asks for it, within :class:`Limits` by
:mod:`gateway.decoding`'s rules, errors naming the input. The core validates names, dtypes and
shapes against the signature once (:func:`gateway.serving.inputs.validated`); only then are
values converted. An input named twice is refused here (INVALID_ARGUMENT): the core sees names
as a set.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from gateway import decoding
from gateway.decoding import Declared, check_total
from gateway.errors import InvalidArgument
from gateway.serving.inputs import Arrays, Expected, Header
from gateway.v2 import datatypes
from gateway.v2.datatypes import Datatype

P = TypeVar("P")


@dataclass(frozen=True)
class Limits:
    """The decoding bounds of one request: ``max_elements`` (``--max_tensor_elements``) and
    ``max_bytes`` (``--max_request_bytes``; None: no bound on the decoded bytes)."""

    max_elements: int
    max_bytes: int | None = None


def declare_input(
    name: str, datatype: str, shape: Sequence[int], limits: Limits, wire_bytes: int = 0
) -> Declared[Datatype]:
    """One input's header (``wire_bytes``: a BYTES tensor's strings' own bytes);
    INVALID_ARGUMENT naming the input for an unknown datatype or a shape out of bounds."""
    try:
        row = datatypes.lookup(datatype)
        return decoding.declare(name, row, row.numpy, tuple(shape), wire_bytes, limits.max_elements)
    except InvalidArgument as exc:
        raise InvalidArgument(f"input '{name}': {exc.message}") from None


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

    ``wire_bytes(item)``: the bytes a BYTES tensor's strings take on the wire (anything for
    other datatypes); ``convert(header, payload)``: the array, of exactly the header's datatype
    and shape (INVALID_ARGUMENT for values that do not fit it)."""

    __slots__ = ("_convert", "_declared", "_limits", "_wire", "_wire_bytes")

    def __init__(
        self,
        wire: Sequence[Wire[P]],
        limits: Limits,
        wire_bytes: Callable[[Wire[P]], int],
        convert: Callable[[Declared[Datatype], P], np.ndarray],
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
        self._declared: list[Declared[Datatype]] = []

    @property
    def names(self) -> Collection[str]:
        return [item.name for item in self._wire]

    def headers(self) -> Iterator[Header]:
        declared: list[Declared[Datatype]] = []
        total = 0
        for item in self._wire:
            wire_bytes = self._wire_bytes(item)
            header = declare_input(item.name, item.datatype, item.shape, self._limits, wire_bytes)
            declared.append(header)
            total += header.nbytes
            yield header.name, header.wire_type.dtype_name, header.shape
        check_total(total, self._limits.max_bytes)
        self._declared = declared

    def fast_arrays(self, expected: Expected) -> tuple[Arrays, int] | None:
        """The arrays when the inputs are exactly ``expected`` (datatype, dims past the first,
        as many rows each) within the limits, each header made here without a second check;
        None for anything else. A payload that does not fill its header is refused as the
        general path refuses it (``convert``'s INVALID_ARGUMENT)."""
        wire = self._wire
        if len(wire) != len(expected.inputs):
            return None
        limits = self._limits
        arrays: Arrays = {}
        rows = -1
        total = 0
        for spec, item in zip(expected.inputs, wire, strict=True):
            row = datatypes.fast_row(item.datatype)
            if item.name != spec.name or row is None or row.dtype_name != spec.dtype_name:
                return None
            shape = tuple(item.shape)
            if not shape or shape[1:] != spec.tail or (rows >= 0 and shape[0] != rows):
                return None
            rows = shape[0]
            count = rows * spec.tail_elements
            if count > limits.max_elements or rows > limits.max_elements or rows < 0:
                return None
            nbytes = count * row.itemsize
            total += nbytes
            header = Declared(item.name, row, row.numpy, shape, count, nbytes)
            arrays[item.name] = self._convert(header, item.payload)
        if limits.max_bytes is not None and total > limits.max_bytes:
            return None
        return arrays, rows

    def arrays(self) -> dict[str, Any]:
        if len(self._declared) != len(self._wire):  # headers() not run to its end: run it
            list(self.headers())
        return {
            header.name: self._convert(header, item.payload)
            for header, item in zip(self._declared, self._wire, strict=True)
        }
