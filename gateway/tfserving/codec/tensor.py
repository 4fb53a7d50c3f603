"""TensorProto ⇄ numpy: the one module that reads and writes ``tensorflow.TensorProto`` fields.

Decoding follows TensorFlow's ``Tensor::FromProto``: a non-empty ``tensor_content`` (raw
little-endian bytes) wins over the typed fields; otherwise the typed field of the dtype is read,
a list shorter than the element count repeats its last value and an empty list means zeros (empty
bytes for strings). Stricter than TensorFlow, which silently truncates: a typed list longer than
the element count, a ``tensor_content`` of the wrong length, and ``int_val`` / ``half_val`` values
out of their dtype's range are INVALID_ARGUMENT. The declared element count is checked against the
caller's bound before anything is allocated.

Encoding follows ``Tensor::AsProtoField`` (typed fields, TF Serving's default) or
``Tensor::AsProtoTensorContent`` (raw bytes); strings always go to ``string_val`` so that
``tf.make_ndarray`` can read them. Float, double, complex and bool typed fields are written as one
packed wire record parsed by protobuf (a memory copy, not a Python object per element).

Canonical dtype names and their numpy dtypes are ``channel.dtypes``'s ("float32", ...,
"string"); this module adds only TensorFlow's ``DataType`` enum and typed field for each. A
"string" tensor is an object array of ``bytes``. The wire formats are little-endian, as is every
host this runs on (checked at import).
"""

from __future__ import annotations

import math
import sys
from typing import Any, Final, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from channel import dtypes
from channel.dtypes import DTYPE_NAMES
from gateway._pb.tensorflow.core.framework import tensor_shape_pb2, types_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway.errors import InvalidArgument, ResourceExhausted

if sys.byteorder != "little":  # pragma: no cover - no big-endian deployment target exists
    raise ImportError("gateway.tfserving.codec.tensor assumes a little-endian host")

MAX_RANK = 64
"""Most dimensions a tensor may have (numpy's limit; TensorFlow allows 254)."""

STRING_ELEMENT_BYTES = 8 + sys.getsizeof(b"")
"""What one decoded string element costs besides its own bytes: a reference in the object array
and a ``bytes`` object's header (41 bytes on CPython 3.11, 64-bit)."""

MAX_PROTO_BYTES = 2**31 - 1
"""Protobuf messages cannot exceed 2 GiB; larger tensors cannot be encoded at all."""


class _Spec(NamedTuple):
    name: str  # canonical name
    data_type: types_pb2.DataType.ValueType
    dtype: np.dtype[Any]
    field: str  # typed TensorProto field


_TF_TYPES: Final = {
    "float32": ("DT_FLOAT", "float_val"),
    "float64": ("DT_DOUBLE", "double_val"),
    "float16": ("DT_HALF", "half_val"),
    "bfloat16": ("DT_BFLOAT16", "half_val"),
    "int8": ("DT_INT8", "int_val"),
    "int16": ("DT_INT16", "int_val"),
    "int32": ("DT_INT32", "int_val"),
    "int64": ("DT_INT64", "int64_val"),
    "uint8": ("DT_UINT8", "int_val"),
    "uint16": ("DT_UINT16", "int_val"),
    "uint32": ("DT_UINT32", "uint32_val"),
    "uint64": ("DT_UINT64", "uint64_val"),
    "bool": ("DT_BOOL", "bool_val"),
    "string": ("DT_STRING", "string_val"),
    "complex64": ("DT_COMPLEX64", "scomplex_val"),
    "complex128": ("DT_COMPLEX128", "dcomplex_val"),
}
"""Canonical dtype name → TensorFlow ``DataType`` enum name and typed TensorProto field."""
if _TF_TYPES.keys() != DTYPE_NAMES:  # every canonical dtype needs a TensorProto encoding
    raise ImportError(f"TensorProto types {sorted(_TF_TYPES)} != dtypes {sorted(DTYPE_NAMES)}")

_SPECS = tuple(
    _Spec(name, types_pb2.DataType.Value(enum_name), dtypes.numpy_dtype(name), field)
    for name, (enum_name, field) in _TF_TYPES.items()
)
_BY_NAME = {spec.name: spec for spec in _SPECS}
_BY_DATA_TYPE: dict[int, _Spec] = {spec.data_type: spec for spec in _SPECS}
_BY_DTYPE = {spec.dtype: spec for spec in _SPECS}
_STRING = _BY_NAME["string"]
_HALF_FIELD = "half_val"
_COMPONENT: dict[str, np.dtype[Any]] = {
    "complex64": np.dtype(np.float32),
    "complex128": np.dtype(np.float64),
}
_FIELD_NUMBER = {f.name: f.number for f in TensorProto.DESCRIPTOR.fields}
_RAW_PAYLOAD_FIELDS = frozenset(
    {"float_val", "double_val", "scomplex_val", "dcomplex_val", "bool_val"}
)
"""Packed fields whose wire payload is the little-endian array bytes (a bool is a 1-byte varint)."""


def _enum_name(value: int) -> str:
    try:
        return types_pb2.DataType.Name(types_pb2.DataType.ValueType(value))
    except ValueError:
        return f"DataType {value}"


def _lookup(value: int) -> _Spec:
    spec = _BY_DATA_TYPE.get(value)
    if spec is None:
        raise InvalidArgument(f"unsupported tensor dtype {_enum_name(value)}")
    return spec


def dtype_name(data_type: int) -> str:
    """DataType enum value → canonical name; INVALID_ARGUMENT naming the enum if unsupported."""
    return _lookup(data_type).name


def _by_name(name: str) -> _Spec:
    spec = _BY_NAME.get(name)
    if spec is None:
        raise InvalidArgument(f"unknown dtype name {name!r}; known: {', '.join(_BY_NAME)}")
    return spec


def data_type(name: str) -> types_pb2.DataType.ValueType:
    """Canonical name → DataType enum value (an ``int``)."""
    return _by_name(name).data_type


def data_type_name(name: str) -> str:
    """Canonical name → TensorFlow's DataType name (``float32`` → ``DT_FLOAT``)."""
    return types_pb2.DataType.Name(_by_name(name).data_type)


def numpy_dtype(name: str) -> np.dtype[Any]:
    """Canonical name → numpy dtype ("string" → object, holding ``bytes``)."""
    return _by_name(name).dtype


def _shape_text(dims: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def shape_of(proto: TensorProto) -> tuple[int, ...]:
    """The tensor's dimensions; INVALID_ARGUMENT for unknown rank, negative dims or rank > 64."""
    shape = proto.tensor_shape
    if shape.unknown_rank:
        raise InvalidArgument("tensor shape has unknown rank; a tensor needs a fully defined shape")
    if len(shape.dim) > MAX_RANK:
        raise InvalidArgument(
            f"tensor has {len(shape.dim)} dimensions, over the limit of {MAX_RANK}"
        )
    dims = tuple(dim.size for dim in shape.dim)
    if any(size < 0 for size in dims):
        raise InvalidArgument(f"tensor shape {_shape_text(dims)} has a negative dimension")
    return dims


class Declared(NamedTuple):
    """What a TensorProto says it holds, read without decoding any value."""

    dtype: str
    """Canonical dtype name."""
    shape: tuple[int, ...]
    nbytes: int
    """Bytes the decoded array may take: elements × item size; a string element counts as its
    8-byte reference plus a ``bytes`` object's header (:data:`STRING_ELEMENT_BYTES` in all), and
    the strings' own bytes count once (bounded by the message's size)."""


def declared(proto: TensorProto, *, max_elements: int) -> Declared:
    """Dtype, shape and decoded size of ``proto``, checked against ``max_elements`` (for the
    element count and for every single dimension, so that a zero beside a huge dimension is
    refused too). INVALID_ARGUMENT for an unsupported dtype or a shape out of bounds."""
    spec = _lookup(proto.dtype)
    shape = shape_of(proto)
    count = math.prod(shape)
    if count > max_elements:
        raise InvalidArgument(
            f"tensor with shape {_shape_text(shape)} has {count} elements, "
            f"over the limit of {max_elements}"
        )
    if count == 0 and any(size > max_elements for size in shape):
        raise InvalidArgument(
            f"tensor with shape {_shape_text(shape)} has a dimension of {max(shape)}, "
            f"over the limit of {max_elements} elements"
        )
    if spec is _STRING:
        nbytes = count * STRING_ELEMENT_BYTES + proto.ByteSize()
    else:
        nbytes = count * spec.dtype.itemsize
    return Declared(spec.name, shape, nbytes)


def to_ndarray(proto: TensorProto, *, max_elements: int) -> npt.NDArray[Any]:
    """Decode ``proto``; its declared element count (and each dimension) must not exceed
    ``max_elements`` (see :func:`declared`).

    ``tensor_content`` comes back as a zero-copy, read-only view of the bytes; typed fields as a
    new array. Callers must not write into the result. Errors are INVALID_ARGUMENT.
    """
    spec = _lookup(proto.dtype)
    shape = declared(proto, max_elements=max_elements).shape
    count = math.prod(shape)
    content = proto.tensor_content  # upb copies bytes on every access: read once
    flat = _from_content(spec, content, count) if content else _from_typed(spec, proto, count)
    return flat.reshape(shape)


def _from_content(spec: _Spec, content: bytes, count: int) -> npt.NDArray[Any]:
    if spec is _STRING:
        return _decode_string_list(content, count)
    expected = count * spec.dtype.itemsize
    if len(content) != expected:
        raise InvalidArgument(
            f"tensor_content of a {spec.name} tensor with {count} elements must be "
            f"{expected} bytes, got {len(content)}"
        )
    flat = np.frombuffer(content, dtype=spec.dtype)
    if spec.name == "bool":
        raw = flat.view(np.uint8)
        if raw.size and raw.max() > 1:  # normalise odd byte values to real booleans
            return np.not_equal(raw, 0)
    return flat


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 35:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    raise InvalidArgument("tensor_content of a string tensor has a truncated length prefix")


def _decode_string_list(content: bytes, count: int) -> npt.NDArray[Any]:
    """TensorFlow's string ``tensor_content``: ``count`` varint32 lengths, then the bytes."""
    sizes = []
    pos = 0
    for _ in range(count):
        size, pos = _read_varint(content, pos)
        sizes.append(size)
    if pos + sum(sizes) != len(content):
        raise InvalidArgument(
            f"tensor_content of a string tensor declares {sum(sizes)} bytes of strings, "
            f"has {len(content) - pos}"
        )
    flat = np.empty(count, dtype=object)
    for index, size in enumerate(sizes):
        flat[index] = content[pos : pos + size]
        pos += size
    return flat


def _from_typed(spec: _Spec, proto: TensorProto, count: int) -> npt.NDArray[Any]:
    values = getattr(proto, spec.field)
    have = len(values)
    component = _COMPONENT.get(spec.name)
    if component is not None:
        if have % 2:
            raise InvalidArgument(f"{spec.field} holds {have} values, not (real, imag) pairs")
        have //= 2
    if have > count:
        raise InvalidArgument(
            f"{spec.field} holds {have} values, more than the {count} elements of the tensor"
        )
    if have == 0:
        if spec is _STRING:
            return np.full(count, b"", dtype=object)
        return np.zeros(count, dtype=spec.dtype)
    flat: npt.NDArray[Any]
    if spec is _STRING:
        flat = np.empty(have, dtype=object)
        flat[:] = list(values)
    elif component is not None:
        flat = np.array(values, dtype=component).view(spec.dtype)
    elif spec.field == _HALF_FIELD:
        flat = _checked_ints(values, np.dtype(np.uint16), spec).view(spec.dtype)
    elif spec.field == "int_val" and spec.dtype != np.int32:
        flat = _checked_ints(values, spec.dtype, spec)
    else:
        flat = np.array(values, dtype=spec.dtype)
    if have < count:  # repeat the last value, bit for bit
        flat = np.concatenate((flat, np.broadcast_to(flat[-1:], (count - have,))))
    return flat


def _checked_ints(values: Any, target: np.dtype[Any], spec: _Spec) -> npt.NDArray[Any]:
    """int32 field values narrowed to ``target``; INVALID_ARGUMENT for any value out of range."""
    ints = np.array(values, dtype=np.int32)
    info = np.iinfo(target)
    bad = ints[(ints < info.min) | (ints > info.max)]
    if bad.size:
        raise InvalidArgument(
            f"{spec.field} value {bad[0]} is out of range for a {spec.name} tensor "
            f"[{info.min}, {info.max}]"
        )
    return ints.astype(target)


def from_ndarray(array: npt.NDArray[Any], *, as_tensor_content: bool = False) -> TensorProto:
    """Encode ``array`` (any layout or byte order) as a TensorProto with its shape.

    Typed fields by default; raw little-endian ``tensor_content`` if ``as_tensor_content``
    (strings always use ``string_val``). Strings may be an object array of ``bytes`` or ``str``
    (UTF-8 encoded), or a numpy ``S``/``U`` array. Unsupported dtypes are INVALID_ARGUMENT; a
    tensor over protobuf's 2 GiB limit is RESOURCE_EXHAUSTED.
    """
    array = np.asarray(array)
    spec = _spec_for_numpy(array.dtype)
    proto = TensorProto(
        dtype=spec.data_type,
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in array.shape]
        ),
    )
    if spec is _STRING:
        proto.string_val.extend(_string_items(array))
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


def _spec_for_numpy(dtype: np.dtype[Any]) -> _Spec:
    if dtype.kind in "OSU":
        return _STRING
    spec = _BY_DTYPE.get(dtype if dtype.isnative else dtype.newbyteorder("="))
    if spec is None:
        raise InvalidArgument(f"unsupported numpy dtype {dtype} for a tensor")
    return spec


def _string_items(array: npt.NDArray[Any]) -> list[bytes]:
    items = []
    for item in array.ravel().tolist():
        if isinstance(item, bytes):
            items.append(item)
        elif isinstance(item, str):
            items.append(item.encode())
        else:
            raise InvalidArgument(
                f"string tensor element of type {type(item).__name__}, expected bytes or str"
            )
    return items


def _append_typed(proto: TensorProto, spec: _Spec, flat: npt.NDArray[Any]) -> None:
    """Append ``flat``'s values to the typed field.

    For float/double/complex/bool fields the packed wire payload is the array's own bytes: one
    record parsed by protobuf, a memory copy (``extend(tolist())`` is ~100x slower). Varint
    fields (int, half bit patterns) go through ``extend(tolist())``; a numpy varint encoder was
    measured at no better than 1-2x on large arrays and slower on small ones.
    """
    if spec.field not in _RAW_PAYLOAD_FIELDS:
        ints = flat.view(np.uint16) if spec.field == _HALF_FIELD else flat
        getattr(proto, spec.field).extend(ints.tolist())
        return
    header = _varint((_FIELD_NUMBER[spec.field] << 3) | 2) + _varint(flat.nbytes)
    record = bytearray(len(header) + flat.nbytes)
    record[: len(header)] = header
    np.frombuffer(record, dtype=np.uint8, offset=len(header))[:] = flat.view(np.uint8)
    proto.MergeFromString(cast(bytes, record))  # any buffer parses; bytes() would copy again


def _varint(value: int) -> bytes:
    """Protobuf varint encoding of a non-negative ``value``."""
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
