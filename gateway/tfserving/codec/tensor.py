"""TensorProto ⇄ numpy: the one module that reads and writes ``tensorflow.TensorProto`` fields.

Its parts, each importable from here: :mod:`~gateway.tfserving.codec.tensor_decode`
(TensorProto → numpy, :func:`to_ndarray`, bounded before allocating by :func:`declared`),
:mod:`~gateway.tfserving.codec.tensor_encode` (numpy → TensorProto, :func:`from_ndarray`) and
:mod:`~gateway.tfserving.codec.tensor_types` (the ``DataType`` and typed field of each dtype).

Decoding follows TensorFlow's ``Tensor::FromProto``: a non-empty ``tensor_content`` (raw
little-endian bytes) wins over the typed fields; otherwise the typed field of the dtype is read,
a list shorter than the element count repeats its last value and an empty list means zeros (empty
bytes for strings). Stricter than TensorFlow, which silently truncates: a typed list longer than
the element count, a ``tensor_content`` of the wrong length, and ``int_val`` / ``half_val`` values
out of their dtype's range are INVALID_ARGUMENT. The declared shape is checked against the
caller's bounds before anything is allocated (:mod:`gateway.decoding`).

Encoding follows ``Tensor::AsProtoField`` (typed fields, TF Serving's default) or
``Tensor::AsProtoTensorContent`` (raw bytes); strings always go to ``string_val`` so that
``tf.make_ndarray`` can read them. Float, double, complex and bool typed fields are written as one
packed wire record parsed by protobuf (a memory copy, not a Python object per element).

Canonical dtype names and their numpy dtypes are ``channel.dtypes``'s ("float32", ...,
"string"); the codec adds only TensorFlow's ``DataType`` enum and typed field for each. A
"string" tensor is an object array of ``bytes``. The wire formats are little-endian, as is every
host this runs on (checked at import).
"""

from __future__ import annotations

from gateway.tfserving.codec.tensor_decode import declared, to_ndarray, values
from gateway.tfserving.codec.tensor_encode import MAX_PROTO_BYTES, from_ndarray
from gateway.tfserving.codec.tensor_types import data_type, data_type_name, dtype_name, numpy_dtype

__all__ = [
    "MAX_PROTO_BYTES",
    "data_type",
    "data_type_name",
    "declared",
    "dtype_name",
    "from_ndarray",
    "numpy_dtype",
    "to_ndarray",
    "values",
]
