"""A run's tensors in the channel's areas: inputs read as arrays without a copy, outputs packed
into one block of the output area.

Strings travel as UTF-8 bytes both ways (:mod:`channel.shm.payload`); a backend that wants text
gets ``str`` inputs (:func:`read_input` with ``as_text``), and ``str`` outputs are encoded on the
way out. Failures are :class:`~channel.messages.WorkerError`: INVALID_ARGUMENT for an input that
does not fit its area or its dtype, RESOURCE_EXHAUSTED for outputs the area cannot hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from channel.dtypes import STRING, dtype_name
from channel.messages import TensorDesc, WorkerError
from channel.shm.arena import align_up
from channel.shm.channel import Channel
from channel.shm.output_area import OutputArenaExhausted
from channel.shm.payload import read_tensor, tensor_nbytes, write_tensor


def read_input(
    channel: Channel, desc: TensorDesc, as_text: bool
) -> tuple[str, np.ndarray[Any, Any]]:
    """``(name, array)``: a zero-copy array over the input area (string tensors: a fresh array
    of ``str`` when ``as_text``, else of ``bytes``)."""
    name = desc["name"]
    try:
        view = channel.input_view(desc["offset"], desc["nbytes"])
        arr = read_tensor(view, desc["dtype"], desc["shape"])
    except ValueError as exc:
        raise WorkerError("INVALID_ARGUMENT", f"input tensor {name!r}: {exc}") from None
    if desc["dtype"] != STRING or not as_text:
        return name, arr
    try:
        text = [item.decode("utf-8") for item in arr.reshape(-1).tolist()]
    except UnicodeDecodeError:
        raise WorkerError("INVALID_ARGUMENT", f"string input {name!r} is not valid UTF-8") from None
    out = np.empty(len(text), dtype=object)
    out[:] = text
    return name, out.reshape(arr.shape)


def write_outputs(channel: Channel, results: dict[str, np.ndarray[Any, Any]]) -> list[TensorDesc]:
    """Copy ``results`` into one block of the output area (strings encoded as UTF-8), each
    tensor 64-byte aligned; their descriptors, in order."""
    descs: list[TensorDesc] = []
    arrays: list[np.ndarray[Any, Any]] = []
    total = 0
    for name, value in results.items():
        arr = value if type(value) is np.ndarray else np.asarray(value)
        if arr.dtype.kind in "OUS":
            encoded = np.empty(arr.size, dtype=object)
            encoded[:] = [
                item.encode("utf-8") if isinstance(item, str) else item
                for item in arr.reshape(-1).tolist()
            ]
            arr = encoded.reshape(arr.shape)
            nbytes = tensor_nbytes(arr)
        else:
            nbytes = arr.nbytes
        descs.append(
            {
                "name": name,
                "dtype": dtype_name(arr.dtype),
                "shape": list(arr.shape),
                "offset": total,  # relative to the block until it is allocated
                "nbytes": nbytes,
            }
        )
        arrays.append(arr)
        total += align_up(nbytes)
    try:
        base = channel.alloc_output(total)
    except OutputArenaExhausted as exc:
        raise WorkerError("RESOURCE_EXHAUSTED", str(exc)) from None
    for desc, arr in zip(descs, arrays, strict=True):
        desc["offset"] += base
        write_tensor(channel.output_view(desc["offset"], desc["nbytes"]), arr)
    return descs
