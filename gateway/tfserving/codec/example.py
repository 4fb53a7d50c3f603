"""tf.Example ⇄ tensors and JSON: the one module that reads and writes ``tensorflow.Example``.

Classify, Regress and MultiInference carry their examples as a ``tensorflow.serving.Input``:
``example_list`` (Examples) or ``example_list_with_context`` (Examples plus one context Example
whose features every example shares; an example's own feature of the same name wins).
:class:`ExampleBatch` gives them to a model in either of two forms:

- :meth:`ExampleBatch.serialized` — a string tensor ``[n]`` of serialized Examples, for a
  TensorFlow signature (it parses them itself, e.g. with ParseExample). With a context, each entry
  is the serialized context followed by the serialized example: protobuf merges concatenated
  messages, so that is the merged Example (TF Serving feeds exactly this).
- :meth:`ExampleBatch.dense_features` — one dense tensor per named input, for models that do not
  parse Examples (ONNX): input ``x`` with shape ``[-1, d...]`` takes feature ``x`` of every
  example, which must hold ``prod(d)`` values of the input's kind (float_list for floating
  dtypes, int64_list for integers and bool, bytes_list for strings). Errors follow TensorFlow's
  ParseExample texts.

The REST body of ``:classify`` / ``:regress`` (TF Serving's ``util/json_tensor.cc``)::

    {"signature_name": "classify_x_to_y",               (optional)
     "context": {"lang": "en"},                          (optional: example_list_with_context)
     "examples": [{"x": 2.0, "tags": ["a", "b"], "img": {"b64": "aGk="}, "n": 3, "ok": true}]}

A feature is a value or a list of values, all of one kind: JSON decimals → float_list (must fit a
float32), integers and booleans → int64_list, strings and ``{"b64": ...}`` → bytes_list.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import ml_dtypes
import numpy as np
import numpy.typing as npt

from gateway._pb.tensorflow.core.example import example_pb2, feature_pb2
from gateway._pb.tensorflow_serving.apis import input_pb2
from gateway.errors import InvalidArgument
from gateway.serving.signature import TensorSpec

CONTEXT_KEY: Final = "context"
EXAMPLES_KEY: Final = "examples"
BASE64_KEY: Final = "b64"

_FLOAT_KIND: Final = "float_list"
_INT_KIND: Final = "int64_list"
_BYTES_KIND: Final = "bytes_list"
_KIND_TEXT: Final = {_FLOAT_KIND: "float", _INT_KIND: "int64", _BYTES_KIND: "bytes"}
"""TensorFlow's names of the Feature kinds in JSON errors."""
_PARSE_TEXT: Final = {_FLOAT_KIND: "float", _INT_KIND: "int64", _BYTES_KIND: "string"}
"""TensorFlow's names of the Feature kinds in ParseExample errors."""

_FLOATS: Final = frozenset({"float16", "bfloat16", "float32", "float64"})
_INTS: Final = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
)
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_UINT64_MAX: Final = 2**64 - 1
_FLOAT32_MAX: Final = float(np.finfo(np.float32).max)


class ExampleBatch:
    """The Examples of one request, read lazily from its ``Input`` message."""

    def __init__(self, proto: input_pb2.Input) -> None:
        self._proto = proto
        kind = proto.WhichOneof("kind")
        self._context: example_pb2.Example | None = None
        self._examples: Sequence[example_pb2.Example] = ()
        if kind == "example_list":
            self._examples = proto.example_list.examples
        elif kind == "example_list_with_context":
            self._examples = proto.example_list_with_context.examples
            self._context = proto.example_list_with_context.context

    @property
    def count(self) -> int:
        """Number of examples (0 when the Input holds none or no kind is set)."""
        return len(self._examples)

    def serialized(self) -> npt.NDArray[np.object_]:
        """A string tensor ``[count]``: each example serialized (after the context, if any)."""
        prefix = b"" if self._context is None else self._context.SerializeToString()
        out = np.empty(self.count, dtype=object)
        out[:] = [prefix + example.SerializeToString() for example in self._examples]
        return out

    def dense_features(self, specs: Sequence[TensorSpec]) -> dict[str, npt.NDArray[Any]]:
        """One dense tensor ``[count, d...]`` per spec, named and shaped after it (see the module
        docstring); InvalidArgument for a missing feature, another kind, or a wrong count."""
        context = {} if self._context is None else dict(self._context.features.feature)
        rows = [
            {**context, **dict(example.features.feature)} if context else example.features.feature
            for example in self._examples
        ]
        return {spec.name: _dense(spec, rows) for spec in specs}


def _dense(spec: TensorSpec, rows: Sequence[Mapping[str, feature_pb2.Feature]]) -> npt.NDArray[Any]:
    kind = _kind_for(spec)
    values: list[Any] = []
    width: int | None = None
    for index, features in enumerate(rows):
        feature = features.get(spec.name)
        if feature is None:
            raise InvalidArgument(
                f"Feature: {spec.name} (data type: {_PARSE_TEXT[kind]}) is required but could "
                "not be found."
            )
        found = feature.WhichOneof("kind")
        if found is not None and found != kind:
            raise InvalidArgument(
                f"Name: <unknown>, Key: {spec.name}, Index: {index}.  Data types don't match. "
                f"Data type: {_PARSE_TEXT[found]} but expected type: {_PARSE_TEXT[kind]}"
            )
        items = list(getattr(feature, kind).value) if found is not None else []
        expected = _row_size(spec, len(items))
        if width is None:
            width = expected
        if len(items) != width:
            raise InvalidArgument(
                f"Name: <unknown>, Key: {spec.name}, Index: {index}.  Number of "
                f"{_PARSE_TEXT[kind]} values != expected.  Values size: {len(items)} but output "
                f"shape: {list(_row_shape(spec, width))}"
            )
        values.extend(items)
    shape = (len(rows), *_row_shape(spec, width or 0))
    return _array(spec, values).reshape(shape)


def _kind_for(spec: TensorSpec) -> str:
    if spec.dtype in _FLOATS:
        return _FLOAT_KIND
    if spec.dtype in _INTS:
        return _INT_KIND
    if spec.dtype == "string":
        return _BYTES_KIND
    raise InvalidArgument(
        f"input '{spec.name}' has dtype {spec.dtype}, which no tf.Example feature can hold"
    )


def _row_shape(spec: TensorSpec, count: int) -> tuple[int, ...]:
    """Per-example shape of ``spec`` (its dims after the batch one) holding ``count`` values."""
    if spec.shape is None:
        return (count,)
    dims = spec.shape[1:]
    known = math.prod(d for d in dims if d >= 0)
    unknown = [i for i, d in enumerate(dims) if d < 0]
    if not unknown:
        return tuple(dims)
    if len(unknown) > 1 or known == 0 or count % known:
        raise InvalidArgument(
            f"input '{spec.name}' has shape {list(spec.shape)}: {count} values of a feature "
            "do not determine its dimensions"
        )
    resolved = list(dims)
    resolved[unknown[0]] = count // known
    return tuple(resolved)


def _row_size(spec: TensorSpec, count: int) -> int:
    return math.prod(_row_shape(spec, count))


def _array(spec: TensorSpec, values: list[Any]) -> npt.NDArray[Any]:
    if spec.dtype == "string":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    dtype = np.dtype(np.float32 if spec.dtype == "bfloat16" else spec.dtype)
    if dtype.kind in "iu" and values:
        info = np.iinfo(dtype)
        low, high = min(values), max(values)
        if low < info.min or high > info.max:
            bad = low if low < info.min else high
            raise InvalidArgument(f"Feature: {spec.name} value {bad} is out of range for {dtype}")
    array = np.asarray(values, dtype=dtype)
    if spec.dtype == "bfloat16":
        return array.astype(ml_dtypes.bfloat16)
    return array


# -- REST JSON -----------------------------------------------------------------------------------
def input_from_json(body: Mapping[str, Any]) -> input_pb2.Input:
    """The ``Input`` of a REST ``:classify`` / ``:regress`` body (see the module docstring);
    InvalidArgument with TF Serving's texts when it is malformed."""
    proto = input_pb2.Input()
    has_context = CONTEXT_KEY in body
    if has_context:
        _example_from_json(body[CONTEXT_KEY], proto.example_list_with_context.context)
    if EXAMPLES_KEY not in body:
        raise _format_error(
            body, f"When method is classify, key '{EXAMPLES_KEY}' is expected and was not found"
        )
    examples = body[EXAMPLES_KEY]
    if type(examples) is not list:
        raise _format_error(body, f"Expecting '{EXAMPLES_KEY}' value to be an list/array")
    if not examples:
        raise _format_error(body, f"'{EXAMPLES_KEY}' value is an empty array")
    target = (
        proto.example_list_with_context.examples if has_context else proto.example_list.examples
    )
    for value in examples:
        _example_from_json(value, target.add())
    return proto


def _example_from_json(value: Any, example: example_pb2.Example) -> None:
    if type(value) is not dict:
        raise InvalidArgument(f"Example must be JSON object but got JSON {_json_type(value)}")
    features = example.features.feature
    for name, content in value.items():
        feature = features[name]
        for item in content if type(content) is list else (content,):
            _add_value(item, name, feature)


def _add_value(value: Any, name: str, feature: feature_pb2.Feature) -> None:
    kind = type(value)
    if kind is bool:
        _check_kind(feature, _INT_KIND, name).value.append(int(value))
    elif kind is str:
        _check_kind(feature, _BYTES_KIND, name).value.append(value.encode("utf-8"))
    elif kind is dict and _is_b64(value):
        _check_kind(feature, _BYTES_KIND, name).value.append(_b64decode(value[BASE64_KEY]))
    elif kind is int and _INT64_MIN <= value <= _INT64_MAX:
        _check_kind(feature, _INT_KIND, name).value.append(value)
    elif kind is int and 0 <= value <= _UINT64_MAX:
        raise InvalidArgument(f"Feature: {name} has uint64 element. Only int64 is supported.")
    elif kind is float or kind is int:  # an integer beyond uint64 is a double, as in rapidjson
        number = float(value)
        if math.isfinite(number) and abs(number) > _FLOAT32_MAX:
            raise InvalidArgument(
                f"Cannot convert JSON value: {value} to float without loss of precision."
            )
        _check_kind(feature, _FLOAT_KIND, name).value.append(number)
    else:
        raise InvalidArgument(
            f"Feature: {name} has element with unexpected JSON type: {_json_type(value)}"
        )


def _check_kind(feature: feature_pb2.Feature, kind: str, name: str) -> Any:
    """The feature's value list of ``kind``; InvalidArgument if it already holds another kind."""
    found = feature.WhichOneof("kind")
    if found is not None and found != kind:
        raise InvalidArgument(
            f"Unexpected element type in feature: {name} expecting type: {_KIND_TEXT[found]}"
        )
    return getattr(feature, kind)


def _is_b64(value: Mapping[str, Any]) -> bool:
    return len(value) == 1 and type(value.get(BASE64_KEY)) is str


def _b64decode(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument("Unable to base64 decode") from None


def _json_type(value: Any) -> str:
    """rapidjson's type names, as TF Serving's errors print them."""
    if value is None:
        return "Null"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if type(value) is dict:
        return "Object"
    if type(value) is list:
        return "Array"
    if type(value) is str:
        return "String"
    return "Number"


def _format_error(body: Mapping[str, Any], text: str) -> InvalidArgument:
    shown = json.dumps(body, ensure_ascii=False, default=str)
    return InvalidArgument(f"JSON Value: {shown} {text}")
