"""Merge, pad and split: the pure arithmetic of batching (no event loop, no I/O).

A request's *size* is its leading (batch) dimension. Requests share a batch only when their
:func:`compat_key` agrees (same input names, dtypes and non-batch dims — or, with variable-length
padding, the same ranks). :func:`fill_rows` writes each request's rows straight into the batch's
destination arrays (shared memory for numeric tensors), which *is* the concatenation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from gateway.errors import Internal, InvalidArgument

Array = npt.NDArray[Any]
CompatKey = tuple[tuple[str, str, tuple[int, ...]], ...]
"""Per input, by name: (name, dtype, non-batch dims), or (name, dtype, (rank,)) when padding."""


def request_size(inputs: Mapping[str, Array]) -> int:
    """The batch dimension shared by all inputs; InvalidArgument if they disagree or are scalars."""
    size = -1
    for name, array in inputs.items():
        if array.ndim == 0:
            raise InvalidArgument(f"input '{name}' is a scalar; batching needs a batch dimension")
        rows = array.shape[0]
        if size != rows:
            if size >= 0:
                detail = ", ".join(f"{n}: {a.shape[0]}" for n, a in sorted(inputs.items()))
                raise InvalidArgument(
                    "all inputs must have the same size in their 0th dimension to be batched "
                    f"({detail})"
                )
            size = rows
    if size < 0:
        raise InvalidArgument("a request needs at least one input to be batched")
    return size


def compat_key(inputs: Mapping[str, Array], *, pad_variable_length: bool) -> CompatKey:
    """What must agree between requests for them to share a batch."""
    key = []
    for name in sorted(inputs):
        array = inputs[name]
        dtype = "string" if array.dtype.kind == "O" else array.dtype.str
        dims = (array.ndim,) if pad_variable_length else array.shape[1:]
        key.append((name, dtype, dims))
    return tuple(key)


def padded_size(rows: int, allowed: Sequence[int]) -> int:
    """The smallest allowed batch size holding ``rows`` (``rows`` itself when none is set, and
    for an empty batch: zero rows are never padded)."""
    if rows == 0:
        return 0
    for size in allowed:
        if size >= rows:
            return size
    return rows


def split_sizes(size: int, first_room: int, max_rows: int) -> list[int]:
    """Cut a task of ``size`` rows: first what fits the open batch, then ``max_rows`` at a time."""
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1, got {max_rows}")
    chunks = []
    first = min(size, max(0, first_room))
    if first:
        chunks.append(first)
    remaining = size - first
    while remaining > 0:
        chunks.append(min(remaining, max_rows))
        remaining -= chunks[-1]
    return chunks


def batch_layout(
    parts: Sequence[Mapping[str, Array]], rows: int
) -> dict[str, tuple[np.dtype[Any], tuple[int, ...]]]:
    """Dtype and shape of each merged input: ``rows`` rows, each non-batch dim the largest seen."""
    layout: dict[str, tuple[np.dtype[Any], tuple[int, ...]]] = {}
    for name, first in parts[0].items():
        dims = [max(int(p[name].shape[i]) for p in parts) for i in range(1, first.ndim)]
        layout[name] = (first.dtype, (rows, *dims))
    return layout


def fill_rows(name: str, dest: Array, parts: Sequence[Mapping[str, Array]]) -> None:
    """Write each part's rows of input ``name`` into ``dest`` in order, then pad.

    A part smaller than ``dest`` in a non-batch dim is padded with its own first element; rows past
    the parts' total (``allowed_batch_sizes`` padding) repeat the batch's first row.
    """
    row = 0
    for part in parts:
        src = part[name]
        n = int(src.shape[0])
        target = dest[row : row + n]
        if src.shape[1:] == dest.shape[1:]:
            target[...] = src
        else:
            target[...] = src.flat[0] if src.size else _zero(dest.dtype)
            target[(slice(None), *(slice(0, d) for d in src.shape[1:]))] = src
        row += n
    if row < dest.shape[0]:
        if row == 0:
            raise ValueError("cannot pad a batch with no rows")
        dest[row:] = dest[0]


def split_outputs(
    outputs: Mapping[str, Array], sizes: Sequence[int], padded_rows: int
) -> list[dict[str, Array]]:
    """Row slices of each output, one dict per task in order (views, no copies).

    Internal error when an output's leading dimension is not the batch size: such a model cannot
    be batched.
    """
    for name, array in outputs.items():
        if array.ndim == 0 or int(array.shape[0]) != padded_rows:
            raise Internal(
                f"output '{name}' has shape {list(array.shape)}, but a batch of {padded_rows} rows "
                "was run: the model's outputs must keep the batch dimension to be batched"
            )
    result = []
    row = 0
    for size in sizes:
        result.append({name: array[row : row + size] for name, array in outputs.items()})
        row += size
    return result


def slice_rows(inputs: Mapping[str, Array], start: int, stop: int) -> dict[str, Array]:
    """Rows ``start:stop`` of every input (views)."""
    return {name: array[start:stop] for name, array in inputs.items()}


def _zero(dtype: np.dtype[Any]) -> Any:
    return b"" if dtype.kind == "O" else dtype.type(0)


def solo_size(inputs: Mapping[str, Array]) -> int:
    """Rows of an unbatched request (1 for scalar-only inputs); only used for statistics."""
    for array in inputs.values():
        if array.ndim:
            return int(array.shape[0])
    return 1
