"""REST JSON ⇄ tensors: the one module that reads and writes TF Serving's REST bodies.

Request (``POST .../models/{m}:predict``): a JSON object with an optional ``"signature_name"``
(string; empty or absent = ``serving_default``) and exactly one of ``"instances"`` (row format) or
``"inputs"`` (columnar format). Other top-level keys are ignored, as upstream.

Row format — a non-empty list with one item per batch row; the rows are stacked, so each input
gets a leading batch dimension of ``len(instances)``. One input: items are values or nested lists.
Several inputs: items are objects with exactly one key per signature input::

    {"instances": [[1.0, 2.0], [3.0, 4.0]]}                       → x: float32[2, 2]
    {"instances": [{"a": [1, 2, 3], "b": "x"}, {"a": [4, 5, 6], "b": "y"}]}
                                                                 → a: [2, 3], b: string[2]

Columnar format — one input: the tensor itself (any rank, scalars included); several inputs: an
object with one key per signature input (extra keys ignored). No shared batch dimension::

    {"inputs": [[1.0, 2.0], [3.0, 4.0]]}
    {"inputs": {"a": [[1, 2, 3]], "b": ["x", "y"]}}

Values are typed through the signature's dtypes (JSON carries none): float inputs take JSON
numbers, including ``NaN``, ``Infinity`` and ``-Infinity``; every number must be within the type's
range and an integer literal must convert exactly (``16777217`` is not a float32; TF Serving also
refuses exact ones above ``2^24-1``), else "Cannot convert JSON value: ... without loss of
precision". Integer inputs take JSON integers
in the dtype's range (``1.0`` is not an integer); bool inputs ``true``/``false``; string inputs
JSON strings (sent as UTF-8 bytes) or ``{"b64": "<base64>"}`` for binary data::

    {"instances": [{"b64": "aGVsbG8="}, "plain text"]}          → string[2]: b"hello", b"plain text"

Nesting must be dense: every list at one depth has the length of the first one there, and values sit
at the depth of the first element's innermost value. Violations are INVALID_ARGUMENT naming the
place, e.g. ``instances[1]: list of 1 values where 2 were expected ...``. Complex inputs are
UNIMPLEMENTED (as upstream); a tensor over ``max_elements`` values is INVALID_ARGUMENT.

Response: row requests get ``{"predictions": [...]}`` (one item per batch row; every output
needs the same batch size >= 1), columnar requests ``{"outputs": ...}``. A single output appears
bare, with its name dropped; several appear as objects keyed by output name::

    {"predictions": [[0.1, 0.9], [0.7, 0.3]]}                    one output
    {"predictions": [{"sum": [5.0], "diff": [-3.0]}, ...]}       several outputs
    {"outputs": {"sum": [[5.0]], "diff": [[-3.0]]}}

Floats are written in their shortest round-trip form (float32 ``0.1`` is ``0.1``), non-finite
ones as ``NaN``/``Infinity``/``-Infinity``; string outputs as JSON strings (they must be UTF-8),
or as ``{"b64": ...}`` when the output name ends in ``_bytes``. Errors are
``{"error": "<message>"}``.

Status and metadata bodies are the GetModelStatus / GetModelMetadata responses rendered by
``google.protobuf.json_format`` as TF Serving renders them (int64 as strings, enums by name;
metadata with proto field names and the ``signature_def`` Any unpacked).

Parsing uses orjson; a body orjson rejects (``NaN``/``Infinity``, or a syntax error) is re-parsed by
the standard library, which accepts those literals and reports syntax errors with their offset.
"""

from __future__ import annotations

import base64
import binascii
import enum
import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import orjson
from google.protobuf import json_format

from gateway._pb.tensorflow_serving.apis import get_model_metadata_pb2, get_model_status_pb2
from gateway.errors import Internal, InvalidArgument, Unimplemented
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.codec.messages import SIGNATURE_DEF_FIELD
from workers.dtypes import dtype_name, numpy_dtype

MAX_RANK = 64
"""Deepest list nesting a tensor may have (numpy's limit on dimensions)."""

BASE64_KEY = "b64"
BYTES_SUFFIX = "_bytes"
_NUMPY = orjson.OPT_SERIALIZE_NUMPY
_SHOW_CHARS = 200
_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

Where = Callable[[tuple[int, ...]], str]
"""Names a place in the request for error messages, given its index path inside one tensor."""


class Format(enum.Enum):
    """How the request carried its tensors; the response answers in the same format."""

    ROW = "instances"
    COLUMNAR = "inputs"


# -- parsing -------------------------------------------------------------------------------------
class _NumberTooBig(Exception):
    pass


def loads(body: bytes) -> dict[str, Any]:
    """Parse a request body that must be a JSON object; INVALID_ARGUMENT saying what is wrong."""
    if not body:
        raise InvalidArgument("JSON Parse error: The document is empty")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        document = _loads_extended(body)
    if not isinstance(document, dict):
        raise InvalidArgument(f"JSON Value: {_show(document)} Is not object")
    return document


def _loads_extended(body: bytes) -> Any:
    """The standard library's parser: it accepts ``NaN``, ``Infinity`` and ``-Infinity``."""
    try:
        return json.loads(body, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"JSON Parse error: {exc.msg} at offset: {exc.pos}") from None
    except _NumberTooBig as exc:
        raise InvalidArgument(
            f"JSON Parse error: number {exc} is out of a double's range"
        ) from None
    except RecursionError:
        raise InvalidArgument("JSON Parse error: lists or objects nested too deeply") from None
    except ValueError as exc:  # not UTF-8/16/32, an integer of over 4300 digits
        raise InvalidArgument(f"JSON Parse error: {exc}") from None


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NumberTooBig(text)
    return value


def signature_name(request: Mapping[str, Any]) -> str:
    """The request's ``signature_name`` ("" when absent: the default signature)."""
    name = request.get("signature_name", "")
    if not isinstance(name, str):
        raise InvalidArgument(f"'signature_name' must be a string value, got {_show(name)}")
    return name


def predict_inputs(
    request: Mapping[str, Any], signature: Signature, *, max_elements: int
) -> tuple[dict[str, np.ndarray], Format]:
    """Decode a predict request's tensors (``instances`` or ``inputs``) for ``signature``."""
    specs = signature.inputs
    if not specs:
        raise InvalidArgument(f"Failed to get input map for signature: {signature.name}")
    if Format.ROW.value in request and Format.COLUMNAR.value in request:
        raise InvalidArgument(
            "Not formatted correctly: expecting only one of 'inputs' or 'instances' keys to exist"
        )
    if Format.ROW.value in request:
        return _from_instances(request[Format.ROW.value], specs, max_elements), Format.ROW
    if Format.COLUMNAR.value in request:
        return _from_inputs(request[Format.COLUMNAR.value], specs, max_elements), Format.COLUMNAR
    raise InvalidArgument("Missing 'inputs' or 'instances' key")


def _is_b64(value: Any) -> bool:
    return type(value) is dict and len(value) == 1 and type(value.get(BASE64_KEY)) is str


def _is_named(value: Any) -> bool:
    """An object of named tensors (as opposed to a value, a list or a ``{"b64": ...}``)."""
    return type(value) is dict and not _is_b64(value)


def _names(specs: Sequence[TensorSpec]) -> str:
    return ",".join(spec.name for spec in specs)


def _path(prefix: str) -> Where:
    return lambda index: prefix + "".join(f"[{i}]" for i in index)


def _row_path(name: str) -> Where:
    return lambda index: (
        f'instances[{index[0]}]["{name}"]' + "".join(f"[{i}]" for i in index[1:])
        if index
        else f'instances[*]["{name}"]'
    )


def _from_instances(
    instances: Any, specs: Sequence[TensorSpec], max_elements: int
) -> dict[str, np.ndarray]:
    if type(instances) is not list:
        raise InvalidArgument(f"Expecting 'instances' to be a list/array, got {_kind(instances)}")
    if not instances:
        raise InvalidArgument("No values in 'instances' array")
    if not _is_named(instances[0]):
        if len(specs) > 1:
            raise InvalidArgument(
                "instances is a plain list, but expecting list of objects as multiple input "
                f"tensors required as per signature (inputs: {_names(specs)})"
            )
        if dict in set(map(type, instances)):
            for index, item in enumerate(instances):
                if _is_named(item):
                    raise InvalidArgument(
                        f"Expecting value/list but got object at item {index} of 'instances'"
                    )
        spec = specs[0]
        return {spec.name: to_tensor(instances, spec, _path("instances"), max_elements)}
    expected = {spec.name for spec in specs}
    columns: dict[str, list[Any]] = {spec.name: [] for spec in specs}
    for index, item in enumerate(instances):
        if not _is_named(item):
            raise InvalidArgument(
                f"Expecting object but got {_kind(item)} at item {index} of 'instances'"
            )
        if item.keys() != expected:
            raise InvalidArgument(
                f"Failed to process element: {index} of 'instances' list. JSON object: "
                f"{_show(item)} must only have keys: {','.join(sorted(expected))}"
            )
        for name, column in columns.items():
            column.append(item[name])
    return {
        spec.name: to_tensor(columns[spec.name], spec, _row_path(spec.name), max_elements)
        for spec in specs
    }


def _from_inputs(
    inputs: Any, specs: Sequence[TensorSpec], max_elements: int
) -> dict[str, np.ndarray]:
    if not _is_named(inputs):
        if len(specs) > 1:
            raise InvalidArgument(
                "inputs is a plain value/list, but expecting an object as multiple input tensors "
                f"required as per signature (inputs: {_names(specs)})"
            )
        return {specs[0].name: to_tensor(inputs, specs[0], _path("inputs"), max_elements)}
    tensors = {}
    for spec in specs:
        if spec.name not in inputs:
            raise InvalidArgument(f"Missing named input: {spec.name} in 'inputs' object.")
        where = _path(f'inputs["{spec.name}"]')
        tensors[spec.name] = to_tensor(inputs[spec.name], spec, where, max_elements)
    return tensors


def to_tensor(value: Any, spec: TensorSpec, where: Where, max_elements: int) -> np.ndarray:
    """One JSON value (a scalar or dense nested lists) → an array of ``spec``'s dtype.

    The shape follows the first element at each depth; the element count is checked against
    ``max_elements`` before anything is converted.
    """
    shape = _dense_shape(value)
    if len(shape) > MAX_RANK:
        raise InvalidArgument(f"{where(())}: lists nested {len(shape)} deep, over {MAX_RANK}")
    count = math.prod(shape)
    if count > max_elements:
        raise InvalidArgument(
            f"{where(())}: tensor of shape {list(shape)} has {count} elements, "
            f"over the limit of {max_elements}"
        )
    leaves = _flatten(value, shape, where)
    convert = _CONVERTERS.get(spec.dtype)
    if convert is None:
        raise Unimplemented(
            f"Conversion of JSON values to type {spec.dtype} is not supported (input '{spec.name}')"
        )
    return convert(leaves, spec, _leaf_where(where, shape)).reshape(shape)


def _dense_shape(value: Any) -> tuple[int, ...]:
    shape: list[int] = []
    while type(value) is list and len(shape) <= MAX_RANK:
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return tuple(shape)


def _flatten(value: Any, shape: tuple[int, ...], where: Where) -> list[Any]:
    """The values of dense nested lists in row-major order (C-speed checks, one pass per depth)."""
    level = [value]
    for depth, size in enumerate(shape):
        if level and set(map(type, level)) != {list}:
            index = next(i for i, item in enumerate(level) if type(item) is not list)
            raise InvalidArgument(
                f"{where(_unravel(index, shape[:depth]))}: found {_show(level[index])} where a "
                f"list of {size} values was expected: values must all sit at the same depth "
                f"({len(shape)}, that of the first one)"
            )
        if level and set(map(len, level)) != {size}:
            index = next(i for i, item in enumerate(level) if len(item) != size)
            raise InvalidArgument(
                f"{where(_unravel(index, shape[:depth]))}: list of {len(level[index])} values "
                f"where {size} were expected: lists at the same depth must have the same length "
                "(ragged lists cannot form a tensor)"
            )
        level = list(itertools.chain.from_iterable(level))
    if list in set(map(type, level)):
        index = next(i for i, item in enumerate(level) if type(item) is list)
        raise InvalidArgument(
            f"{where(_unravel(index, shape))}: found a list where a value was expected: lists "
            f"must all be nested as deep as the first one ({len(shape)})"
        )
    return level


def _unravel(flat_index: int, dims: Sequence[int]) -> tuple[int, ...]:
    index = []
    for size in reversed(dims):
        flat_index, rest = divmod(flat_index, size)
        index.append(rest)
    return tuple(reversed(index))


LeafWhere = Callable[[int], str]
"""Names the place of the value at a flat (row-major) index."""


def _leaf_where(where: Where, shape: tuple[int, ...]) -> LeafWhere:
    return lambda flat_index: where(_unravel(flat_index, shape))


def _first(leaves: Iterable[Any], bad: Callable[[Any], bool]) -> tuple[int, Any]:
    return next((i, v) for i, v in enumerate(leaves) if bad(v))


def _type_error(leaves: list[Any], allowed: set[type], spec: TensorSpec, at: LeafWhere) -> None:
    index, value = _first(leaves, lambda v: type(v) not in allowed)
    hint = ""
    if allowed == {int} and type(value) is float and value.is_integer():
        hint = " (integers must be written without fraction or exponent, within 64 bits)"
    raise InvalidArgument(
        f"{at(index)}: JSON Value: {_show(value)} Type: {_kind(value)} is not of expected type: "
        f"{spec.dtype}{hint}"
    )


_FLOAT_MAX = {  # largest finite magnitude of each float dtype
    "float16": float(np.finfo(np.float16).max),
    "bfloat16": (2 - 2**-7) * 2.0**127,
    "float32": float(np.finfo(np.float32).max),
    "float64": math.inf,
}
_EXACT_IN_DOUBLE = 2**53
"""Integers below this magnitude are exact doubles; from it on, exactness is checked in Python."""


def _lossy(value: Any, spec: TensorSpec, where: str) -> InvalidArgument:
    return InvalidArgument(
        f"{where}: Cannot convert JSON value: {_show(value)} to {spec.dtype} without loss of "
        "precision."
    )


def _to_float(leaves: list[Any], spec: TensorSpec, at: LeafWhere) -> npt.NDArray[Any]:
    """Numbers within the dtype's range; integer literals must also be exact in the dtype."""
    types = set(map(type, leaves))
    if not types <= {float, int}:
        _type_error(leaves, {float, int}, spec, at)
    dtype = numpy_dtype(spec.dtype)
    try:
        array = np.array(leaves, dtype=np.float64)
    except OverflowError:  # an integer beyond any double (only the fallback parser makes those)
        index, value = _first(leaves, lambda v: type(v) is int and not _exact(v, dtype))
        raise _lossy(value, spec, at(index)) from None
    largest = _FLOAT_MAX[spec.dtype]
    if largest < math.inf:
        over = np.isfinite(array) & (np.abs(array) > largest)
        if over.any():
            index = int(np.argmax(over))
            raise _lossy(leaves[index], spec, at(index))
    result = array.astype(dtype)
    if int in types:
        if float in types:
            is_int = np.fromiter((type(v) is int for v in leaves), dtype=bool, count=len(leaves))
            ints, converted = array[is_int], result[is_int]
        else:
            ints, converted = array, result
        if (converted.astype(np.float64) != ints).any() or (
            ints.size and np.abs(ints).max() >= _EXACT_IN_DOUBLE
        ):
            found = next(
                ((i, v) for i, v in enumerate(leaves) if type(v) is int and not _exact(v, dtype)),
                None,
            )
            if found is not None:
                raise _lossy(found[1], spec, at(found[0]))
    return result


def _exact(value: int, dtype: np.dtype[Any]) -> bool:
    """True when the integer converts to ``dtype`` (a float type) without rounding."""
    try:
        as_double = float(value)
    except OverflowError:
        return False
    if as_double != value or abs(as_double) > _FLOAT_MAX[dtype_name(dtype)]:
        return False
    return float(np.array(as_double).astype(dtype)) == as_double


def _to_int(leaves: list[Any], spec: TensorSpec, at: LeafWhere) -> npt.NDArray[Any]:
    if set(map(type, leaves)) - {int}:
        _type_error(leaves, {int}, spec, at)
    dtype = numpy_dtype(spec.dtype)
    info = np.iinfo(dtype)
    wide = np.uint64 if dtype == np.uint64 else np.int64
    try:
        array = np.array(leaves, dtype=wide)
        in_range = dtype == wide or not ((array < info.min) | (array > info.max)).any()
    except OverflowError:
        in_range = False
    if not in_range:
        index, value = _first(leaves, lambda v: not info.min <= v <= info.max)
        raise InvalidArgument(
            f"{at(index)}: JSON value {_show(value)} is out of range for {spec.dtype} "
            f"[{info.min}, {info.max}]"
        )
    return array.astype(dtype, copy=False)


def _to_bool(leaves: list[Any], spec: TensorSpec, at: LeafWhere) -> npt.NDArray[Any]:
    if set(map(type, leaves)) - {bool}:
        _type_error(leaves, {bool}, spec, at)
    return np.array(leaves, dtype=np.bool_)


def _to_string(leaves: list[Any], spec: TensorSpec, at: LeafWhere) -> npt.NDArray[Any]:
    types = set(map(type, leaves))
    if types - {str, dict}:
        _type_error(leaves, {str, dict}, spec, at)
    try:
        if dict in types:
            items = [_string_item(v, at, i) for i, v in enumerate(leaves)]
        else:
            items = list(map(str.encode, leaves))
    except UnicodeEncodeError:
        index, value = _first(leaves, lambda v: type(v) is str and not _encodable(v))
        raise InvalidArgument(
            f"{at(index)}: string {_show(value)} is not valid Unicode (it holds a lone surrogate "
            'escape); send binary data as {"b64": ...}'
        ) from None
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _string_item(value: str | dict[str, Any], at: LeafWhere, index: int) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if not _is_b64(value):
        raise InvalidArgument(
            f"{at(index)}: JSON Value: {_show(value)} not formatted correctly for base64 data "
            '(expected {"b64": "<base64 string>"})'
        )
    text: str = value[BASE64_KEY]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument(f"{at(index)}: Unable to base64 decode {_show(text)}") from None


_Converter = Callable[[list[Any], TensorSpec, LeafWhere], npt.NDArray[Any]]
_CONVERTERS: dict[str, _Converter] = {
    **dict.fromkeys(("float16", "bfloat16", "float32", "float64"), _to_float),
    **dict.fromkeys(
        ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"), _to_int
    ),
    "bool": _to_bool,
    "string": _to_string,
}


# -- responses -----------------------------------------------------------------------------------
def predict_response(outputs: Mapping[str, np.ndarray], fmt: Format) -> bytes:
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


def error_body(message: str) -> bytes:
    """``{"error": message}`` (any lone surrogate in the message is escaped, never fatal)."""
    return orjson.dumps({"error": message.encode("utf-8", "backslashreplace").decode()})


def dumps(document: Any) -> bytes:
    """Serialise a JSON-able document (numpy arrays and orjson Fragments allowed)."""
    try:
        return orjson.dumps(document, option=_NUMPY)
    except orjson.JSONEncodeError as exc:
        raise Internal(f"response is not JSON-serialisable: {exc}") from None


# -- messages ------------------------------------------------------------------------------------
_KINDS = {type(None): "Null", bool: "Bool", int: "Number", float: "Number", str: "String"}


def _kind(value: Any) -> str:
    if type(value) is list:
        return "Array"
    if type(value) is dict:
        return "Object"
    return _KINDS.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    """Short JSON text of a value for error messages."""
    if type(value) is float and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    more = type(value) is list and len(value) > 8
    shown = value[:8] if more else value
    try:
        text = orjson.dumps(shown).decode()
    except orjson.JSONEncodeError:
        text = repr(shown)
    if more:
        text = text[:-1] + ",...]"
    return text if len(text) <= _SHOW_CHARS else text[: _SHOW_CHARS - 3] + "..."
