"""Tensors → TF Serving's REST JSON bodies: predict responses, status, metadata and errors.

Predict: row requests get ``{"predictions": [...]}`` (one item per batch row; every output needs
the same batch size >= 1), columnar requests ``{"outputs": ...}``. A single output appears bare,
with its name dropped; several appear as objects keyed by output name::

    {"predictions": [[0.1, 0.9], [0.7, 0.3]]}                    one output
    {"predictions": [{"sum": [5.0], "diff": [-3.0]}, ...]}       several outputs
    {"outputs": {"sum": [[5.0]], "diff": [[-3.0]]}}

Floats are written in their shortest round-trip form (float32 ``0.1`` is ``0.1``; float16 and
bfloat16 as their float32 values), non-finite ones as ``NaN``/``Infinity``/``-Infinity``; string
outputs as JSON strings (they must be UTF-8), or as ``{"b64": ...}`` when the output name ends in
``_bytes``::

    {"outputs": {"image_bytes": [{"b64": "AP8="}], "label": ["cat"]}}

Errors are ``{"error": "<message>"}``.

Status and metadata bodies are the GetModelStatus / GetModelMetadata responses rendered by
``google.protobuf.json_format`` as TF Serving renders them (int64 as strings, enums by name;
metadata with proto field names and the ``signature_def`` Any unpacked).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np
import orjson
from google.protobuf import json_format

from gateway._pb.tensorflow_serving.apis import get_model_metadata_pb2, get_model_status_pb2
from gateway.errors import Internal, InvalidArgument
from gateway.tfserving.codec.service_messages import SIGNATURE_DEF_FIELD
from gateway.tfserving.rest.json_request import Format
from gateway.tfserving.rest.json_values import BASE64_KEY

BYTES_SUFFIX = "_bytes"
_NUMPY = orjson.OPT_SERIALIZE_NUMPY
_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def predict_json(outputs: Mapping[str, np.ndarray], fmt: Format) -> bytes:
    """The JSON body answering a predict request made in ``fmt``."""
    if not outputs:
        raise InvalidArgument("Cannot convert empty tensor map to JSON")
    if fmt is Format.COLUMNAR:
        if len(outputs) == 1:
            ((name, array),) = outputs.items()
            return orjson.dumps({"outputs": _value(name, array)}, option=_NUMPY)
        columns = {name: _value(name, array) for name, array in outputs.items()}
        return orjson.dumps({"outputs": columns}, option=_NUMPY)
    batch = _batch_size(outputs)
    if len(outputs) == 1:
        ((name, array),) = outputs.items()
        return orjson.dumps({"predictions": _value(name, array)}, option=_NUMPY)
    rows = {name: _rows(name, array) for name, array in outputs.items()}
    predictions = [{name: value[i] for name, value in rows.items()} for i in range(batch)]
    return orjson.dumps({"predictions": predictions}, option=_NUMPY)


def _batch_size(outputs: Mapping[str, np.ndarray]) -> int:
    batch = 0
    hint = "; the columnar 'inputs' format has no such constraint"
    for name, array in outputs.items():
        if array.ndim == 0:
            raise InvalidArgument(f"Tensor name: {name} has no shape information{hint}")
        if array.shape[0] < 1:
            raise InvalidArgument(
                f"Tensor name: {name} has invalid batch size: {array.shape[0]}{hint}"
            )
        if batch and array.shape[0] != batch:
            raise InvalidArgument(
                f"Tensor name: {name} has inconsistent batch size: {array.shape[0]} "
                f"expecting: {batch}{hint}"
            )
        batch = array.shape[0]
    return batch


def _value(name: str, array: np.ndarray) -> Any:
    """Something orjson writes as the tensor's JSON: an array, a numpy scalar, lists, a Fragment."""
    if array.dtype.kind in "OSU":
        return _strings(name, array)
    array = _numeric(name, array)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        return _fragment(array)
    return array if array.ndim else array[()]


def _rows(name: str, array: np.ndarray) -> Any:
    """Per-row JSON-able values: ``rows[i]`` is the tensor's row ``i``."""
    if array.dtype.kind in "OSU":
        return _strings(name, array)
    array = _numeric(name, array)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        return [_fragment(row) for row in array]
    return array


def _numeric(name: str, array: np.ndarray) -> np.ndarray:
    if array.dtype == _BFLOAT16:
        array = array.astype(np.float32)
    elif array.dtype.kind == "c":
        raise InvalidArgument(
            f"Failed to write JSON value for tensor type: {array.dtype} (output '{name}')"
        )
    elif not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array if array.flags.c_contiguous else np.array(array, order="C")


_SPECIALS = {True: b"Infinity", False: b"-Infinity"}


def _fragment(array: Any) -> orjson.Fragment:
    """A float tensor holding NaN or infinities, as JSON with the ``NaN``/``Infinity`` literals.

    orjson writes non-finite floats as ``null``; a float tensor's JSON holds no other ``null``,
    so the n-th ``null`` is the n-th non-finite value in row-major order.
    """
    array = np.asarray(array)
    flat = array.reshape(-1)
    special = flat[~np.isfinite(flat)]
    parts = orjson.dumps(array if array.ndim else array[()], option=_NUMPY).split(b"null")
    if len(parts) != special.size + 1:
        raise Internal("non-finite float output could not be written as JSON")
    tokens = [b"NaN" if math.isnan(v) else _SPECIALS[v > 0] for v in special.tolist()]
    out = bytearray(parts[0])
    for token, part in zip(tokens, parts[1:], strict=True):
        out += token
        out += part
    return orjson.Fragment(bytes(out))


def _strings(name: str, array: np.ndarray) -> Any:
    """A string tensor as nested lists of str, or of ``{"b64": ...}`` for ``*_bytes`` outputs."""
    flat = [v.encode() if type(v) is str else v for v in array.reshape(-1).tolist()]
    items: list[Any]
    if name.endswith(BYTES_SUFFIX):
        items = [{BASE64_KEY: base64.b64encode(v).decode("ascii")} for v in flat]
    else:
        try:
            items = [v.decode() for v in flat]
        except UnicodeDecodeError:
            raise Internal(
                f"string output '{name}' holds bytes that are not valid UTF-8; name outputs that "
                f"carry binary data with a '{BYTES_SUFFIX}' suffix to get them as "
                '{"b64": ...}, or use the gRPC API'
            ) from None
    nested = np.empty(len(items), dtype=object)
    nested[:] = items
    return nested.reshape(array.shape).tolist()


# -- other bodies --------------------------------------------------------------------------------
def status_body(response: get_model_status_pb2.GetModelStatusResponse) -> bytes:
    """GetModelStatus as TF Serving's JSON (JSON names, defaults printed)."""
    document = json_format.MessageToDict(response, always_print_fields_with_no_presence=True)
    for entry in document.get("model_version_status", ()):
        # TF Serving always sets ``status`` (OK for healthy versions); an unset one means OK.
        entry.setdefault("status", {"error_code": "OK", "error_message": ""})
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)


def metadata_body(response: get_model_metadata_pb2.GetModelMetadataResponse) -> bytes:
    """GetModelMetadata as TF Serving's JSON: proto field names, the SignatureDefMap unpacked."""
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    packed = response.metadata.get(SIGNATURE_DEF_FIELD)
    if packed is None or not packed.Unpack(signature_map):
        raise Internal(f"metadata response lacks a '{SIGNATURE_DEF_FIELD}' SignatureDefMap")
    document = {
        "model_spec": _proto_dict(response.model_spec),
        "metadata": {SIGNATURE_DEF_FIELD: _proto_dict(signature_map)},
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)


def _proto_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(
        message, always_print_fields_with_no_presence=True, preserving_proto_field_name=True
    )


def dumps(document: Any) -> bytes:
    """Serialise a JSON-able document (numpy arrays and orjson Fragments allowed)."""
    try:
        return orjson.dumps(document, option=_NUMPY)
    except orjson.JSONEncodeError as exc:
        raise Internal(f"response is not JSON-serialisable: {exc}") from None
