"""A run's tensors in the channel's areas: inputs read as arrays without a copy, outputs packed
into one block of the output area.

Strings travel as UTF-8 bytes both ways (:mod:`channel.shm.payload`); a backend that wants text
gets ``str`` inputs (:func:`read_inputs` with ``as_text``), and ``str`` outputs are encoded on the
way out. Failures are :class:`~channel.messages.WorkerError`: INVALID_ARGUMENT for an input that
does not fit its area or its dtype, RESOURCE_EXHAUSTED for outputs the area cannot hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from channel.dtypes import CANONICAL_NAMES, STRING, dtype_name
from channel.messages import TensorDesc, WorkerError
from channel.shm.arena import ALIGNMENT
from channel.shm.channel import Channel
from channel.shm.output_area import OutputArenaExhausted
from channel.shm.payload import tensor_at, tensor_nbytes, write_tensor


def read_inputs(
    channel: Channel, inputs: tuple[TensorDesc, ...], as_text: bool
) -> dict[str, np.ndarray[Any, Any]]:
    """The run's inputs by name: zero-copy arrays over the input area (string tensors: a fresh
    array of ``str`` when ``as_text``, else of ``bytes``)."""
    area = channel.input_area
    feeds: dict[str, np.ndarray[Any, Any]] = {}
    for desc in inputs:
        try:
            arr = tensor_at(area, desc)
        except ValueError as exc:
            raise WorkerError("INVALID_ARGUMENT", f"input tensor {desc.name!r}: {exc}") from None
        if as_text and desc.dtype == STRING:
            arr = _text(desc.name, arr)
        feeds[desc.name] = arr
    return feeds


def _text(name: str, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    try:
        text = [item.decode("utf-8") for item in arr.reshape(-1).tolist()]
    except UnicodeDecodeError:
        raise WorkerError("INVALID_ARGUMENT", f"string input {name!r} is not valid UTF-8") from None
    out = np.empty(len(text), dtype=object)
    out[:] = text
    return out.reshape(arr.shape)


def write_outputs(
    channel: Channel, results: Mapping[str, np.ndarray[Any, Any]]
) -> tuple[TensorDesc, ...]:
    """Copy ``results`` into one block of the output area (strings encoded as UTF-8), each
    tensor 64-byte aligned; their descriptors, in order."""
    laid: list[tuple[str, str, np.ndarray[Any, Any], int]] = []
    total = 0
    for name, value in results.items():
        arr = value if type(value) is np.ndarray else np.asarray(value)
        if arr.dtype.kind in "OUS":
            arr = _utf8(arr)
            dtype, nbytes = STRING, tensor_nbytes(arr)
        else:
            dtype, nbytes = CANONICAL_NAMES.get(arr.dtype) or dtype_name(arr.dtype), arr.nbytes
        laid.append((name, dtype, arr, nbytes))
        total += -(-nbytes // ALIGNMENT) * ALIGNMENT
    try:
        offset = channel.alloc_output(total)
    except OutputArenaExhausted as exc:
        raise WorkerError("RESOURCE_EXHAUSTED", str(exc)) from None
    area = channel.output_area
    descs = []
    for name, dtype, arr, nbytes in laid:
        write_tensor(area[offset : offset + nbytes], arr)
        descs.append(tuple.__new__(TensorDesc, (name, dtype, arr.shape, offset, nbytes)))
        offset += -(-nbytes // ALIGNMENT) * ALIGNMENT
    return tuple(descs)


def _utf8(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A string tensor's elements as ``bytes`` (``str`` encoded as UTF-8)."""
    encoded = np.empty(arr.size, dtype=object)
    encoded[:] = [
        item.encode("utf-8") if isinstance(item, str) else item for item in arr.reshape(-1).tolist()
    ]
    return encoded.reshape(arr.shape)
