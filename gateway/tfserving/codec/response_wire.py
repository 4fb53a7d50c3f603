"""A PredictResponse's wire bytes, written straight from the outputs (the hot path's encoder: no
message is built). Predict's handler has no response serializer
(:func:`gateway.transport.grpc_services.unary` with ``bytes``): the servicer returns these bytes
as they are.

The bytes are those protobuf writes for the same ``PredictResponse`` message, byte for byte:
``outputs`` (field 1, one map entry per output, in the outputs' order), then ``model_spec``
(field 2: name, ``version`` as an Int64Value, ``signature_name`` when not empty). A tensor whose
typed field is a packed copy of its little-endian bytes (float, double, complex, bool:
:data:`~gateway.tfserving.codec.tensor_encode.RAW_PAYLOAD_FIELDS`), and every tensor with
``--enable_serialization_as_tensor_content``, is written here; any other (varint-typed integers,
halves, strings) through protobuf (:func:`~gateway.tfserving.codec.tensor_encode.from_ndarray`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from gateway.errors import ResourceExhausted
from gateway.proto_wire import LEN, field, varint
from gateway.tfserving.codec.tensor_encode import (
    FIELD_NUMBER,
    MAX_PROTO_BYTES,
    RAW_PAYLOAD_FIELDS,
    from_ndarray,
)
from gateway.tfserving.codec.tensor_types import STRING, for_numpy

_CACHE_LIMIT = 4096
"""Most model specs and dtype heads kept (each a few bytes)."""


_TENSOR_CONTENT_TAG = varint(FIELD_NUMBER["tensor_content"] << 3 | LEN)
_spec_cache: dict[tuple[str, int, str], bytes] = {}
_head_cache: dict[tuple[np.dtype[Any], tuple[int, ...]], tuple[bytes, bytes] | None] = {}


def model_spec_field(model: str, version: int, signature_name: str) -> bytes:
    """PredictResponse's ``model_spec`` field (number 2), as ``fill_model_spec`` sets it."""
    key = (model, version, signature_name)
    cached = _spec_cache.get(key)
    if cached is not None:
        return cached
    spec = field(1, model.encode()) if model else b""
    spec += field(2, (b"\x08" + varint(version)) if version else b"")
    if signature_name:
        spec += field(3, signature_name.encode())
    encoded = field(2, spec)
    if len(_spec_cache) < _CACHE_LIMIT:
        _spec_cache[key] = encoded
    return encoded


def _head(dtype: np.dtype[Any], shape: tuple[int, ...]) -> tuple[bytes, bytes] | None:
    """A tensor's ``dtype`` and ``tensor_shape`` fields, and the tag of its packed typed field;
    None when its values go through protobuf (varint-typed fields, strings)."""
    key = (dtype, shape)
    if key in _head_cache:
        return _head_cache[key]
    spec = for_numpy(dtype)
    head: tuple[bytes, bytes] | None = None
    if spec is not STRING:
        dims = b"".join(field(2, (b"\x08" + varint(size)) if size else b"") for size in shape)
        fields = b"\x08" + varint(spec.data_type) + field(2, dims)
        typed_tag = varint(FIELD_NUMBER[spec.field] << 3 | LEN)
        head = (fields, typed_tag if spec.field in RAW_PAYLOAD_FIELDS else b"")
    if len(_head_cache) < _CACHE_LIMIT:
        _head_cache[key] = head
    return head


def tensor_bytes(array: npt.NDArray[Any], *, as_tensor_content: bool) -> bytes:
    """``array`` as TensorProto wire bytes (typed fields, or ``tensor_content``)."""
    head = _head(array.dtype, array.shape)
    if head is None or not (head[1] or as_tensor_content):
        return from_ndarray(array, as_tensor_content=as_tensor_content).SerializeToString()
    fields, typed_tag = head
    if array.nbytes > MAX_PROTO_BYTES:
        raise ResourceExhausted(
            f"tensor of {array.nbytes} bytes is over protobuf's limit of {MAX_PROTO_BYTES} bytes"
        )
    if not array.size:
        return fields
    tag = _TENSOR_CONTENT_TAG if as_tensor_content else typed_tag
    return fields + tag + varint(array.nbytes) + _payload(array)


def _payload(array: npt.NDArray[Any]) -> bytes:
    """The array's values as little-endian bytes, in C order."""
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False)
    return data.tobytes()


_entry_cache: dict[tuple[str, np.dtype[Any], tuple[int, ...], bool], bytes | None] = {}


def _entry_prefix(name: str, array: npt.NDArray[Any], as_tensor_content: bool) -> bytes | None:
    """The bytes of output ``name``'s map entry before its values, when ``array``'s values are a
    packed copy of its bytes (the entry's length is then known from its shape and dtype); None
    otherwise (empty, varint-typed or string tensors: :func:`tensor_bytes` writes them whole)."""
    key = (name, array.dtype, array.shape, as_tensor_content)
    if key in _entry_cache:
        return _entry_cache[key]
    head = _head(array.dtype, array.shape)
    prefix: bytes | None = None
    if head is not None and (head[1] or as_tensor_content) and array.size:
        fields, typed_tag = head
        tag = _TENSOR_CONTENT_TAG if as_tensor_content else typed_tag
        tensor_head = fields + tag + varint(array.nbytes)
        tensor_len = len(tensor_head) + array.nbytes
        value_head = varint(2 << 3 | LEN) + varint(tensor_len) + tensor_head
        key_field = field(1, name.encode())
        entry_len = len(key_field) + len(value_head) + array.nbytes
        prefix = varint(1 << 3 | LEN) + varint(entry_len) + key_field + value_head
    if len(_entry_cache) < _CACHE_LIMIT:
        _entry_cache[key] = prefix
    return prefix


def predict_response(
    model: str,
    version: int,
    signature_name: str,
    outputs: Mapping[str, npt.NDArray[Any]],
    *,
    as_tensor_content: bool,
) -> bytes:
    """The PredictResponse's bytes (see the module docstring)."""
    parts = []
    for name, array in outputs.items():
        prefix = _entry_prefix(name, array, as_tensor_content)
        if prefix is not None and array.nbytes <= MAX_PROTO_BYTES:
            parts.append(prefix)
            parts.append(_payload(array))
            continue
        entry = field(1, name.encode()) + field(
            2, tensor_bytes(array, as_tensor_content=as_tensor_content)
        )
        parts.append(field(1, entry))
    parts.append(model_spec_field(model, version, signature_name))
    return b"".join(parts)
