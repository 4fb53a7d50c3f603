"""How OpenVINO's model ports and error messages read in tensorgate's terms: the served name,
dtype and shape of an input or output, and a load error's reason.

Dtypes are the numeric ones (:data:`_TYPES`; OpenVINO's string tensors are not served); a
dynamic dimension is ``-1`` and a dynamic rank ``None``, as in every signature.
"""

from __future__ import annotations

import re
from typing import Any, Final

from channel.messages import WireTensorSpec, WorkerError

_TYPES: Final = {
    "f32": "float32",
    "f64": "float64",
    "f16": "float16",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "boolean": "bool",
}
"""OpenVINO element type names → canonical dtype names (numeric tensors only)."""


def port_name(port: Any) -> str:
    """The name a model's input or output is served by: its node's name when the tensor bears
    it (a SavedModel's Parameter and Result are named after the signature's aliases, which
    matters when one tensor bears several: ``y = identity(x)``), else the tensor's name (ONNX:
    the graph's input and output names)."""
    node_name = port.get_node().get_friendly_name()
    names = port.get_names()
    return str(node_name) if node_name in names else str(port.get_any_name())


def spec(port: Any, name: str, what: str, path: str) -> WireTensorSpec:
    """The WireTensorSpec of model ``path``'s ``what`` (input / output) ``port`` served as ``name``;
    FAILED_PRECONDITION for an element type tensorgate does not serve on OpenVINO."""
    dtype = _TYPES.get(port.get_element_type().get_type_name())
    if dtype is None:
        raise WorkerError(
            "FAILED_PRECONDITION",
            f"model {path}: {what} {name!r} has element type "
            f"{port.get_element_type()}, which tensorgate does not serve on OpenVINO",
        )
    shape = port.get_partial_shape()
    dims = None
    if not shape.rank.is_dynamic:
        dims = [dim.get_length() if dim.is_static else -1 for dim in shape]
    return {"name": name, "dtype": dtype, "shape": dims}


_LOCATIONS: Final = re.compile(r"(Exception from \S+:\d+:|Check '.*?' failed at \S+:\d+:)\s*")
"""The source locations OpenVINO's messages begin with (``Exception from src/...cpp:84:``)."""


def reason(exc: Exception) -> str:
    """OpenVINO's message on one line, without its source locations."""
    return _LOCATIONS.sub("", " ".join(str(exc).split())).strip()
