"""JSON values → typed numpy arrays: the value rules of TF Serving's REST API.

JSON carries no dtypes: each value is typed through the signature input's dtype.

- float16, bfloat16, float32, float64: JSON numbers, including ``NaN``, ``Infinity`` and
  ``-Infinity``. A number is rounded to the nearest value of the dtype (ties to even) and refused
  only when that is an infinity: ``3.4028235e+38`` (float32's max as JSON writes it) is float32's
  max, while ``3.4028236e+38`` is refused for float32, as are ``65520`` for float16 and ``1e39``
  for float32. An integer literal must also convert exactly (``16777217`` is not a float32; TF
  Serving also refuses exact ones above ``2^24-1``). Either refusal is "Cannot convert JSON value:
  ... to float32 without loss of precision."
- int8 … int64, uint8 … uint64: JSON integers in the dtype's range (``1.0`` is not an integer),
  else e.g. "JSON value 128 is out of range for int8 [-128, 127]".
- bool: ``true`` / ``false``.
- string: JSON strings (sent as UTF-8 bytes) or ``{"b64": "<base64>"}`` for binary data::

    {"instances": [{"b64": "aGVsbG8="}, "plain text"]}          → string[2]: b"hello", b"plain text"

A value of another JSON type is "JSON Value: ... Type: ... is not of expected type: ...".
Complex inputs are UNIMPLEMENTED (as upstream). Every error names the value's place in the request
(``inputs[0][1]: ...``), which the caller supplies as a :data:`LeafWhere`.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Iterable
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import orjson

from channel.dtypes import numpy_dtype
from gateway.decoding import encodable_utf8
from gateway.errors import InvalidArgument, Unimplemented
from gateway.serving.signature import TensorSpec

BASE64_KEY = "b64"
_SHOW_CHARS = 200

LeafWhere = Callable[[int], str]
"""Names the place of the value at a flat (row-major) index, for error messages."""


def to_array(leaves: list[Any], spec: TensorSpec, at: LeafWhere) -> npt.NDArray[Any]:
    """JSON scalar values (row-major) → a 1-D array of ``spec``'s dtype; INVALID_ARGUMENT naming
    the first value that breaks the rules, UNIMPLEMENTED for a dtype JSON cannot carry."""
    convert = _CONVERTERS.get(spec.dtype)
    if convert is None:
        raise Unimplemented(
            f"Conversion of JSON values to type {spec.dtype} is not supported (input '{spec.name}')"
        )
    return convert(leaves, spec, at)


def is_b64(value: Any) -> bool:
    """True for ``{"b64": "<string>"}`` (exactly that one key)."""
    return type(value) is dict and len(value) == 1 and type(value.get(BASE64_KEY)) is str


def _first(leaves: Iterable[Any], bad: Callable[[Any], bool]) -> tuple[int, Any]:
    return next((i, v) for i, v in enumerate(leaves) if bad(v))


def _type_error(leaves: list[Any], allowed: set[type], spec: TensorSpec, at: LeafWhere) -> None:
    index, value = _first(leaves, lambda v: type(v) not in allowed)
    hint = ""
    if allowed == {int} and type(value) is float and value.is_integer():
        hint = " (integers must be written without fraction or exponent, within 64 bits)"
    raise InvalidArgument(
        f"{at(index)}: JSON Value: {show(value)} Type: {kind(value)} is not of expected type: "
        f"{spec.dtype}{hint}"
    )


_EXACT_IN_DOUBLE = 2**53
"""Integers below this magnitude are exact doubles; from it on, exactness is checked in Python."""
_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def _lossy(value: Any, spec: TensorSpec, where: str) -> InvalidArgument:
    return InvalidArgument(
        f"{where}: Cannot convert JSON value: {show(value)} to {spec.dtype} without loss of "
        "precision."
    )


def _to_float(leaves: list[Any], spec: TensorSpec, at: LeafWhere) -> npt.NDArray[Any]:
    """Numbers that round to a finite value of the dtype; integer literals must also be exact."""
    types = set(map(type, leaves))
    if not types <= {float, int}:
        _type_error(leaves, {float, int}, spec, at)
    dtype = numpy_dtype(spec.dtype)
    try:
        array = np.array(leaves, dtype=np.float64)
    except OverflowError:  # an integer beyond any double (only the fallback parser makes those)
        index, value = _first(leaves, lambda v: type(v) is int and not _exact(v, dtype))
        raise _lossy(value, spec, at(index)) from None
    result = _round_float(array, dtype)
    overflow = np.isinf(result) & np.isfinite(array)
    if overflow.any():
        index = int(np.argmax(overflow))
        raise _lossy(leaves[index], spec, at(index))
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


_EXACT_BELOW = {"float16": 2**11, "bfloat16": 2**8, "float32": 2**24, "float64": 2**53}
"""Every integer of smaller magnitude converts exactly to the float dtype."""


def numbers_array(values: npt.NDArray[Any], spec: TensorSpec) -> npt.NDArray[Any] | None:
    """A flat buffer of JSON numbers (:class:`gateway.json_numbers.Numbers`' ``values``: int64
    when every literal is an integer, else float64) as ``spec``'s dtype, when :func:`to_array`
    would accept those numbers and give the same array; None when only the numbers as Python
    values can tell (a possible refusal, a literal's kind): the caller then runs
    :func:`to_array` on them."""
    dtype_name = spec.dtype
    if dtype_name in _EXACT_BELOW:
        dtype = numpy_dtype(dtype_name)
        wide = values.astype(np.float64, copy=False)
        result = _round_float(wide, dtype)
        if np.isinf(result).any():  # past the dtype's range (no literal is infinite)
            return None
        suspects = np.abs(wide) >= _EXACT_BELOW[dtype_name]
        if not suspects.any():
            return result  # every integer literal among them converts exactly
        if values.dtype.kind == "f":
            # An integral value this large may be an integer literal, which must convert
            # exactly; only the literals can tell.
            return None if (wide[suspects] % 1 == 0).any() else result
        if (result.astype(np.float64) != wide).any() or np.abs(wide).max() >= _EXACT_IN_DOUBLE:
            return None
        return result
    if values.dtype.kind != "i" or dtype_name not in _INTEGERS:
        return None  # bool, string and the like: each value's type decides
    info = np.iinfo(numpy_dtype(dtype_name))
    if values.size and (values.min() < info.min or values.max() > info.max):
        return None
    return values.astype(numpy_dtype(dtype_name))


_INTEGERS = frozenset(("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))


def _round_float(array: npt.NDArray[np.float64], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Doubles rounded to the float ``dtype``: nearest, ties to even; beyond its range: ±inf.

    numpy rounds a double to float16 and float32 once; ml_dtypes rounds it to bfloat16 through
    float32, twice, which can miss by one step at a tie (``1 + 2**-8 + 2**-52`` would become 1,
    and the largest double below bfloat16's overflow threshold an infinity). Rounding to float32
    *to odd* first (truncate, then set the last bit if anything was cut off) keeps the one
    rounding correct: float32 has 16 more bits than bfloat16.
    """
    with np.errstate(over="ignore"):  # overflow is the caller's to report
        if dtype != _BFLOAT16:
            return array.astype(dtype)
        single = array.astype(np.float32)
        rounded_away = np.abs(single.astype(np.float64)) > np.abs(array)
        single = np.where(rounded_away, np.nextafter(single, np.float32(0)), single)
        inexact = single.astype(np.float64) != array  # true for NaN, which stays NaN
        odd = single.view(np.uint32) | inexact.astype(np.uint32)
        result: npt.NDArray[Any] = odd.view(np.float32).astype(dtype)
        return result


def _exact(value: int, dtype: np.dtype[Any]) -> bool:
    """True when the integer converts to ``dtype`` (a float type) without rounding."""
    try:
        as_double = float(value)
    except OverflowError:
        return False
    if as_double != value:
        return False
    return float(_round_float(np.array([as_double]), dtype)[0]) == as_double


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
            f"{at(index)}: JSON value {show(value)} is out of range for {spec.dtype} "
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
        index, value = _first(leaves, lambda v: type(v) is str and not encodable_utf8(v))
        raise InvalidArgument(
            f"{at(index)}: string {show(value)} is not valid Unicode (it holds a lone surrogate "
            'escape); send binary data as {"b64": ...}'
        ) from None
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def _string_item(value: str | dict[str, Any], at: LeafWhere, index: int) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if not is_b64(value):
        raise InvalidArgument(
            f"{at(index)}: JSON Value: {show(value)} not formatted correctly for base64 data "
            '(expected {"b64": "<base64 string>"})'
        )
    text: str = value[BASE64_KEY]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument(f"{at(index)}: Unable to base64 decode {show(text)}") from None


_Converter = Callable[[list[Any], TensorSpec, LeafWhere], npt.NDArray[Any]]
_CONVERTERS: dict[str, _Converter] = {
    **dict.fromkeys(("float16", "bfloat16", "float32", "float64"), _to_float),
    **dict.fromkeys(
        ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"), _to_int
    ),
    "bool": _to_bool,
    "string": _to_string,
}


# -- messages ------------------------------------------------------------------------------------
_KINDS = {type(None): "Null", bool: "Bool", int: "Number", float: "Number", str: "String"}


def kind(value: Any) -> str:
    """The JSON type of a parsed value, as TF Serving names it in messages ("Number", ...)."""
    if type(value) is list:
        return "Array"
    if type(value) is dict:
        return "Object"
    return _KINDS.get(type(value), type(value).__name__)


def show(value: Any) -> str:
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
