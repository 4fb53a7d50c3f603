"""numpy → TensorProto, following TensorFlow's ``Tensor::AsProtoField`` (typed fields, TF
Serving's default) or ``Tensor::AsProtoTensorContent`` (raw little-endian bytes).

Strings always go to ``string_val`` so that ``tf.make_ndarray`` can read them. Float, double,
complex and bool typed fields are written as one packed wire record parsed by protobuf (a memory
copy, not a Python object per element).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import numpy.typing as npt

from channel.dtypes import string_items
from gateway._pb.tensorflow.core.framework import tensor_shape_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.proto_wire import LEN, varint
from gateway.tfserving.codec.tensor_types import HALF_FIELD, STRING, TensorType, for_numpy

MAX_PROTO_BYTES = 2**31 - 1
"""Protobuf messages cannot exceed 2 GiB; larger tensors cannot be encoded at all."""

FIELD_NUMBER = {f.name: f.number for f in TensorProto.DESCRIPTOR.fields}
RAW_PAYLOAD_FIELDS = frozenset(
    {"float_val", "double_val", "scomplex_val", "dcomplex_val", "bool_val"}
)
"""Packed fields whose wire payload is the little-endian array bytes (a bool is a 1-byte varint)."""


def from_ndarray(array: npt.NDArray[Any], *, as_tensor_content: bool = False) -> TensorProto:
    """Encode ``array`` (any layout or byte order) as a TensorProto with its shape.

    Typed fields by default; raw little-endian ``tensor_content`` if ``as_tensor_content``
    (strings always use ``string_val``). Strings may be an object array of ``bytes`` or ``str``
    (UTF-8 encoded), or a numpy ``S``/``U`` array. Unsupported dtypes are INVALID_ARGUMENT; a
    tensor over protobuf's 2 GiB limit is RESOURCE_EXHAUSTED.
    """
    array = np.asarray(array)
    spec = for_numpy(array.dtype)
    proto = TensorProto(
        dtype=spec.data_type,
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in array.shape]
        ),
    )
    if spec is STRING:
        try:
            proto.string_val.extend(string_items(array))
        except TypeError as exc:
            raise InvalidArgument(str(exc)) from None
        return proto
    if array.nbytes > MAX_PROTO_BYTES:
        raise ResourceExhausted(
            f"tensor of {array.nbytes} bytes is over protobuf's limit of {MAX_PROTO_BYTES} bytes"
        )
    flat = np.ascontiguousarray(array, dtype=spec.dtype).reshape(-1)
    if as_tensor_content:
        proto.tensor_content = flat.tobytes()
    elif flat.size:
        _append_typed(proto, spec, flat)
    return proto


def _append_typed(proto: TensorProto, spec: TensorType, flat: npt.NDArray[Any]) -> None:
    """Append ``flat``'s values to the typed field: for float/double/complex/bool fields one
    packed record whose payload is the array's own bytes (a memory copy); varint fields (int,
    half bit patterns) through ``extend(tolist())``."""
    if spec.field not in RAW_PAYLOAD_FIELDS:
        ints = flat.view(np.uint16) if spec.field == HALF_FIELD else flat
        getattr(proto, spec.field).extend(ints.tolist())
        return
    header = varint(FIELD_NUMBER[spec.field] << 3 | LEN) + varint(flat.nbytes)
    record = bytearray(len(header) + flat.nbytes)
    record[: len(header)] = header
    np.frombuffer(record, dtype=np.uint8, offset=len(header))[:] = flat.view(np.uint8)
    proto.MergeFromString(cast(bytes, record))  # any buffer parses; bytes() would copy again
