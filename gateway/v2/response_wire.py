"""``inference.ModelInferResponse`` written straight as wire bytes, as SerializeToString writes it.

ModelInfer's hot path answers bytes its handler sends as they are (as TF Serving's Predict
does): no response message is built and serialized per call. The fields, in number order:
``model_name`` (1), ``model_version`` (2), ``id`` (3) when not empty, one ``outputs`` entry (5:
``name``, ``datatype``, packed ``shape``) per output, then one ``raw_output_contents`` entry (6)
per output in the same order (every output's values raw, as Triton answers: see
:mod:`gateway.v2.grpc_infer`). Empty strings and empty shapes are left out, as proto3 leaves
them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy.typing as npt

from gateway.proto_wire import field, field_head, varint
from gateway.v2 import datatypes, raw, version_strings

_heads: dict[tuple[str, str, tuple[int, ...]], bytes] = {}
_HEADS_MAX = 4096
"""Most output descriptions kept (name, datatype, shape: a few bytes each)."""


def infer_response(
    model: str, version: int, request_id: str, outputs: Mapping[str, npt.NDArray[Any]]
) -> bytes:
    """The encoded response for ``outputs`` (in the order given). UNIMPLEMENTED for an output
    whose dtype has no V2 datatype."""
    parts = [field(1, model.encode()) if model else b""]
    parts.append(field(2, version_strings.version_string(version).encode()))
    if request_id:
        parts.append(field(3, request_id.encode("utf-8", "surrogatepass")))
    contents: list[bytes] = []
    for name, array in outputs.items():
        row = datatypes.for_numpy(array.dtype)
        parts.append(_output(name, row.name, array.shape))
        payload = raw.to_raw(array, row)
        contents += (field_head(6, len(payload)), payload)
    parts += contents
    return b"".join(parts)


def _output(name: str, datatype: str, shape: tuple[int, ...]) -> bytes:
    key = (name, datatype, shape)
    head = _heads.get(key)
    if head is None:
        body = field(1, name.encode()) + field(2, datatype.encode())
        if shape:
            body += field(3, b"".join(varint(d) for d in shape))
        head = field(5, body)
        if len(_heads) < _HEADS_MAX:
            _heads[key] = head
    return head
