"""What a V2 request's input tensors declare, checked before any value is read or allocated.

Both wire forms (gRPC ``ModelInferRequest``, REST JSON) first turn each input's header (name,
datatype, shape) into a :class:`Declared` and check the whole request against the signature and
the bounds; only then are values decoded. The bounds are TF Serving's codec's:

- ``max_elements`` (``--max_tensor_elements``): a tensor's element count, and each single
  dimension (so a zero beside a huge dimension is refused too) — INVALID_ARGUMENT;
- ``max_bytes`` (``--max_request_bytes``): the bytes all decoded inputs would take, a BYTES
  element counting its 8-byte reference and a ``bytes`` header (:data:`STRING_ELEMENT_BYTES`)
  plus its own bytes — RESOURCE_EXHAUSTED.

Against the signature: input names (no duplicates, exactly the signature's), datatypes (with V2
names in the message), and shapes where the signature checks them (``-1`` = any size).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.serving.signature import Signature
from gateway.v2 import datatypes
from gateway.v2.datatypes import Datatype

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


def check_signature(inputs: Sequence[Declared], signature: Signature) -> None:
    """The inputs' names, datatypes and shapes against ``signature`` (INVALID_ARGUMENT)."""
    seen: set[str] = set()
    for declared in inputs:
        if declared.name in seen:
            raise InvalidArgument(f"input '{declared.name}' is given more than once")
        seen.add(declared.name)
    signature.check_input_names(seen)
    for declared in inputs:
        spec = next(t for t in signature.inputs if t.name == declared.name)
        if declared.datatype.dtype_name != spec.dtype:
            expected = datatypes.for_dtype_name(spec.dtype).name
            raise InvalidArgument(
                f"input '{declared.name}' has datatype {declared.datatype.name} but the model "
                f"expects {expected}"
            )
        signature.check_input(declared.name, spec.dtype, declared.shape, check_dtype=False)
