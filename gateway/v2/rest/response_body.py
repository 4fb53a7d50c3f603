"""Numpy outputs → the REST inference response: JSON, or JSON followed by binary tensor data.

::

    {"model_name": "mlp", "model_version": "2", "id": "42",
     "outputs": [{"name": "label", "datatype": "INT64", "shape": [1], "data": [3]},
                 {"name": "probs", "datatype": "FP32", "shape": [1, 10],
                  "parameters": {"binary_data_size": 40}}]}
    <40 bytes of probs>

An output goes as binary data (its raw bytes after the JSON, outputs in order, the
``binary_data_size`` parameter giving each size) when its request ``binary_data`` parameter says so,
else when the request's ``binary_data_output`` does (a raw binary request: always); the other
outputs carry JSON ``data`` (:mod:`gateway.v2.rest.json_values`). A BYTES output with an element
that is not UTF-8 cannot be JSON and goes as binary data whatever was asked (``tritonclient`` reads
either). With any binary data the response has ``Inference-Header-Content-Length`` (the JSON's
length) and ``Content-Type: application/octet-stream``; without, ``application/json``. ``id`` is
present only when the request had one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy.typing as npt
import orjson

from gateway.v2 import datatypes, raw, version_strings
from gateway.v2.call import InferCall
from gateway.v2.parameters import BINARY_DATA_SIZE
from gateway.v2.rest import json_values
from gateway.v2.rest.request_body import INFER_HEADER

JSON_TYPE: Final = "application/json"
BINARY_TYPE: Final = "application/octet-stream"


@dataclass(frozen=True)
class RestResponse:
    """A response body in parts (the JSON, then each binary tensor) and its headers."""

    chunks: tuple[bytes, ...]
    headers: dict[str, str]

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


def infer_body(
    call: InferCall, model: str, version: int, outputs: Mapping[str, npt.NDArray[Any]]
) -> RestResponse:
    """The response to ``call`` for ``outputs`` (in the order given)."""
    binary_names = call.binary_outputs(list(outputs))
    entries: list[dict[str, Any]] = []
    binary: list[bytes] = []
    for name, array in outputs.items():
        row = datatypes.for_numpy(array.dtype)
        entry: dict[str, Any] = {"name": name, "datatype": row.name, "shape": list(array.shape)}
        data = None
        if name not in binary_names:
            try:
                data = json_values.to_json(array, row)
            except json_values.NotText:
                data = None
        if data is None:
            payload = raw.to_raw(array, row)
            entry["parameters"] = {BINARY_DATA_SIZE: len(payload)}
            binary.append(payload)
        else:
            entry["data"] = data
        entries.append(entry)
    document: dict[str, Any] = {
        "model_name": model,
        "model_version": version_strings.version_string(version),
    }
    if call.id:
        document["id"] = call.id
    document["outputs"] = entries
    header = orjson.dumps(document)
    if not binary:
        return RestResponse((header,), {"Content-Type": JSON_TYPE})
    headers = {"Content-Type": BINARY_TYPE, INFER_HEADER: str(len(header))}
    return RestResponse((header, *binary), headers)


def json_response(document: Any) -> RestResponse:
    """Any other V2 JSON answer (metadata, health, statistics, repository index)."""
    return RestResponse((orjson.dumps(document),), {"Content-Type": JSON_TYPE})
