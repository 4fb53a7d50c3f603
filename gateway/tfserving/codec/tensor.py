"""TensorProto ⇄ numpy: the one module that reads and writes ``tensorflow.TensorProto`` fields.

Its parts, each importable from here: :mod:`~gateway.tfserving.codec.tensor_decode`
(TensorProto → numpy, :func:`to_ndarray`, bounded before allocating by :func:`declared`;
TensorFlow's ``Tensor::FromProto``, stricter), :mod:`~gateway.tfserving.codec.tensor_encode`
(numpy → TensorProto, :func:`from_ndarray`; ``Tensor::AsProtoField`` or
``Tensor::AsProtoTensorContent``) and :mod:`~gateway.tfserving.codec.tensor_types` (the
``DataType`` and typed field of each dtype). Each part's docstring states its rules.

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
