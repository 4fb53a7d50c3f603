"""How many bytes an ONNX model's outputs take in the worker's output arena, told before the run
from the shapes ONNX Runtime declares, and after it from the arrays.

Bytes are counted as the worker lays outputs out (``channel.shm.payload``): each output 64-byte
aligned, a string tensor at least its table of 8-byte lengths. Before a run, an output is sized
when every dimension of its declared shape (as ONNX Runtime's shape inference leaves it) is
static or a symbol that also names an input dimension — ``[batch, 10]`` for an input
``[batch, 64]``; the symbol's size is then the input's (the least, if inputs disagree).
Anything else (unknown rank, a dimension only the run tells) is left to the check after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple

import numpy as np

from channel.dtypes import STRING, numpy_dtype
from channel.messages import WireTensorSpec, WorkerError
from channel.shm.arena import ALIGNMENT, align_up

_LENGTH_BYTES: Final = 8
"""Bytes of each entry of a string tensor's length table (and of its count)."""

Places = tuple[tuple[str, int], ...]
"""Where a symbolic dimension's size is read off the inputs: (input name, axis) pairs."""


class Size(NamedTuple):
    """One output's size per its declared shape: ``item * count + head`` bytes, ``count`` being
    ``static`` times the size of each input dimension in ``dims`` (a symbol that one input
    dimension bears) times the least size of each group in ``shared`` (a symbol several do)."""

    item: int
    head: int
    static: int
    dims: Places
    shared: tuple[Places, ...]


class Bound(NamedTuple):
    """What the declared shapes tell of a set of outputs before a run: ``fixed`` bytes for the
    static ones plus what the inputs' shapes give for the ``scaled`` ones; ``exact`` when that
    is all of them, to the byte (every output sized, no strings)."""

    fixed: int
    scaled: tuple[Size, ...]
    exact: bool

    def least_bytes(self, inputs: dict[str, np.ndarray[Any, Any]]) -> int:
        """The arena bytes the outputs take at least when the model runs on ``inputs``."""
        total = self.fixed
        try:
            for item, head, count, dims, shared in self.scaled:
                for name, axis in dims:
                    count *= inputs[name].shape[axis]
                for places in shared:
                    count *= min([inputs[name].shape[axis] for name, axis in places])
                total += -(-(item * count + head) // ALIGNMENT) * ALIGNMENT
        except (KeyError, IndexError):  # an input missing or of a lower rank: ORT refuses it
            pass
        return total


def declared_sizes(
    inputs: Iterable[Any], outputs: Iterable[Any], served: list[WireTensorSpec]
) -> dict[str, Size]:
    """The ``served`` outputs that the declared shapes size before a run, by name; ``inputs``
    and ``outputs`` are ONNX Runtime's ``NodeArg`` descriptions (``name``, ``shape``)."""
    places: dict[str, list[tuple[str, int]]] = {}
    for arg in inputs:
        for axis, dim in enumerate(arg.shape or ()):
            if isinstance(dim, str):
                places.setdefault(dim, []).append((arg.name, axis))
    dtypes = {spec["name"]: spec["dtype"] for spec in served}
    sizes: dict[str, Size] = {}
    for arg in outputs:
        dtype = dtypes.get(arg.name)
        if dtype is None or not arg.shape:  # not served; unknown rank (or a mere scalar)
            continue
        static, dims, shared = 1, [], []
        for dim in arg.shape:
            if isinstance(dim, int) and dim >= 0:
                static *= dim
            elif isinstance(dim, str) and dim in places:
                if len(places[dim]) == 1:
                    dims.append(places[dim][0])
                else:
                    shared.append(tuple(places[dim]))
            else:
                break  # a size only the run tells
        else:
            if dtype == STRING:
                item, head = _LENGTH_BYTES, _LENGTH_BYTES
            else:
                item, head = numpy_dtype(dtype).itemsize, 0
            sizes[arg.name] = Size(item, head, static, tuple(dims), tuple(shared))
    return sizes


def bound(sizes: dict[str, Size], names: Sequence[str]) -> Bound:
    """The bound of the outputs ``names``, given the ``sizes`` :func:`declared_sizes` found."""
    fixed, scaled, exact = 0, [], True
    for name in names:
        size = sizes.get(name)
        if size is None:
            exact = False
            continue
        exact = exact and not size.head
        if size.dims or size.shared:
            scaled.append(size)
        else:
            fixed += align_up(size.item * size.static + size.head)
    return Bound(fixed, tuple(scaled), exact)


def arena_bytes(arrays: Iterable[np.ndarray[Any, Any]]) -> int:
    """Bytes ``arrays`` take in the output arena: exact for fixed-size dtypes, at least (their
    lengths alone) for strings."""
    total = 0
    for arr in arrays:
        if arr.dtype.kind in "OSU":
            total += align_up(_LENGTH_BYTES * (1 + arr.size))
        else:
            total += align_up(arr.nbytes)
    return total


def refusal(nbytes: int, limit: int, *, exact: bool) -> WorkerError:
    """RESOURCE_EXHAUSTED for outputs of ``nbytes`` (at least, unless ``exact``) over ``limit``,
    in the worker's own words for outputs that do not fit its arena."""
    at_least = "" if exact else "at least "
    return WorkerError(
        "RESOURCE_EXHAUSTED",
        f"outputs of {at_least}{nbytes} bytes exceed the worker's output arena of {limit} bytes",
    )
