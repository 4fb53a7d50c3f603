"""A SavedModel's signatures as the worker serves them, or lists them for the metadata only.

A signature is served when every one of its tensors is a dense, named tensor of a canonical dtype
(see ``channel.dtypes``): :func:`served_signature` maps its aliases to graph tensor names and
writes its wire description, ``{"inputs": [...], "outputs": [...], "method_name": ...}``, whose
TensorSpecs also carry their graph ``tensor_name``. Any other signature cannot be fed or fetched:
:func:`served_signature` says why (ValueError) and :func:`metadata_only` writes its entry with
``"unservable"`` (the reason) and ``"definition"`` (its SignatureDef, serialized, base64), so the
metadata shows it unchanged. SignatureDefs are TensorFlow's protobuf messages, read by field.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from channel.dtypes import DTYPE_NAMES
from channel.messages import WireTensorSpec


@dataclass(frozen=True)
class ServedSignature:
    """One servable signature: aliases → graph tensor names, and its wire description."""

    inputs: dict[str, str]
    outputs: dict[str, str]
    wire: dict[str, Any]


def dtype_names(tf: Any) -> dict[int, str]:
    """TensorFlow's ``DataType`` enum values → canonical dtype names, one per canonical name
    (TensorFlow spells its dtypes the same way: ``tf.as_dtype("float16")`` is DT_HALF)."""
    return {int(tf.as_dtype(name).as_datatype_enum): name for name in sorted(DTYPE_NAMES)}


def served_signature(names: dict[int, str], signature_def: Any) -> ServedSignature:
    """A servable signature (``names``: as :func:`dtype_names` gives them); ValueError saying why
    a SignatureDef cannot be served."""
    inputs = [_spec(names, a, info) for a, info in sorted(signature_def.inputs.items())]
    outputs = [_spec(names, a, info) for a, info in sorted(signature_def.outputs.items())]
    return ServedSignature(
        inputs={spec["name"]: str(spec["tensor_name"]) for spec in inputs},
        outputs={spec["name"]: str(spec["tensor_name"]) for spec in outputs},
        wire={
            "inputs": inputs,
            "outputs": outputs,
            "method_name": str(signature_def.method_name),
        },
    )


def metadata_only(signature_def: Any, reason: str) -> dict[str, Any]:
    """The wire entry of a signature listed in the metadata but never run."""
    return {
        "inputs": [],
        "outputs": [],
        "method_name": str(signature_def.method_name),
        "unservable": reason,
        "definition": base64.b64encode(signature_def.SerializeToString()).decode("ascii"),
    }


def _spec(names: dict[int, str], alias: str, info: Any) -> dict[str, Any]:
    """A TensorInfo as a WireTensorSpec plus ``tensor_name``; ValueError if it cannot be served."""
    if info.WhichOneof("encoding") != "name":
        raise ValueError(f"tensor {alias!r} is not a dense named tensor")
    dtype = names.get(int(info.dtype))
    if dtype is None:
        raise ValueError(f"tensor {alias!r} has dtype {info.dtype}, which cannot be served")
    shape = info.tensor_shape
    spec: WireTensorSpec = {
        "name": alias,
        "dtype": dtype,
        "shape": None if shape.unknown_rank else [int(d.size) for d in shape.dim],
    }
    return {**spec, "tensor_name": str(info.name)}
