"""The TensorFlow Serving codecs; the tensor codec is the one place that reads and writes
``tensorflow.TensorProto`` fields.

The tensor codec's parts: :mod:`~gateway.tfserving.codec.tensor_decode` (TensorProto → numpy,
:func:`~gateway.tfserving.codec.tensor_decode.to_ndarray`, bounded before allocating by
:func:`~gateway.tfserving.codec.tensor_decode.declared`; TensorFlow's ``Tensor::FromProto``,
stricter), :mod:`~gateway.tfserving.codec.tensor_encode` (numpy → TensorProto,
:func:`~gateway.tfserving.codec.tensor_encode.from_ndarray`; ``Tensor::AsProtoField`` or
``Tensor::AsProtoTensorContent``) and :mod:`~gateway.tfserving.codec.tensor_types` (the
``DataType`` and typed field of each dtype). Import each name from the part that defines it;
each part's docstring states its rules.

Canonical dtype names and their numpy dtypes are ``channel.dtypes``'s ("float32", ...,
"string"); the codec adds only TensorFlow's ``DataType`` enum and typed field for each. A
"string" tensor is an object array of ``bytes``. The wire formats are little-endian, as is every
host this runs on (checked at import).
"""
