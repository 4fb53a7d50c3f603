"""V2 JSON tensor ``data`` ⇄ numpy.

Request ``data`` is a JSON array in row-major order, flat or nested in any way (the protocol allows
the tensor's natural nesting or a flattened one: ``[[1, 2], [4, 5]]`` and ``[1, 2, 4, 5]`` are the
same [2, 2] tensor); a rank-0 tensor may give its value bare. The values must number exactly the
shape's elements and be, per datatype (no coercion across kinds; INVALID_ARGUMENT naming the input
and the first bad value otherwise):

- BOOL: ``true`` / ``false``;
- INT*, UINT*: integers within the datatype's range;
- FP16, BF16, FP32, FP64: numbers, and the ``NaN`` / ``Infinity`` / ``-Infinity`` literals
  (rounded to the datatype, ties to even);
- BYTES: strings, each element's UTF-8 bytes.

Response ``data`` is flat: booleans, integers, numbers (FP16/BF16 as the numbers they hold,
non-finite ones as the literals above), and strings for BYTES — a BYTES element that is not UTF-8
cannot be a JSON string, so :func:`to_json` refuses it (the response writer then sends that
output as binary data instead).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from gateway.decoding import Declared
from gateway.errors import InvalidArgument
from gateway.json_numbers import Numbers
from gateway.v2.datatypes import BYTES, Datatype


class NotText(ValueError):
    """A BYTES output element that is not UTF-8, so not a JSON string."""


def flatten(data: Any) -> list[Any]:
    """The leaves of a nested JSON array, in order (a bare value is one leaf); iterative, so
    nesting depth costs no recursion."""
    if not isinstance(data, list):
        return [data]
    leaves: list[Any] = []
    stack = [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            leaves.append(item)
        else:
            stack.pop()
    return leaves


def to_array(data: Any, header: Declared[Datatype]) -> npt.NDArray[Any]:
    """Decode one input's ``data`` into an array of its declared datatype and shape (``data``
    may be a :class:`~gateway.json_numbers.Numbers`: its buffer, converted by the same rules)."""
    if type(data) is Numbers:
        converted = _numbers_array(data.values, header)
        if converted is not None:
            return converted.reshape(header.shape)
        data = data.python()  # the rules below say what is wrong
    leaves = flatten(data)
    if len(leaves) != header.elements:
        raise InvalidArgument(
            f"input '{header.name}': expected {header.elements} values for shape "
            f"{list(header.shape)}, got {len(leaves)}"
        )
    row = header.wire_type
    if row.name == "BOOL":
        _check(leaves, header, lambda v: isinstance(v, bool), "a boolean")
        flat = _chunked(leaves, np.bool_)
    elif row.name == BYTES:
        _check(leaves, header, lambda v: isinstance(v, str), "a string")
        flat = np.empty(len(leaves), dtype=object)
        flat[:] = [_utf8(v, header) for v in leaves]
    elif row.numpy.kind in "iu":
        _check(
            leaves, header, lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"
        )
        flat = _integers(leaves, row, header)
    else:
        _check(leaves, header, _is_number, "a number")
        try:
            flat = _chunked(leaves, np.float64).astype(row.numpy)
        except OverflowError:  # an integer past float64's range (the parser takes any size)
            index = next(i for i, v in enumerate(leaves) if isinstance(v, int) and _too_big(v))
            raise InvalidArgument(
                f"input '{header.name}': value {index} ({_show(leaves[index])}) is out of range "
                f"for {row.name}"
            ) from None
    return flat.reshape(header.shape)


def _numbers_array(values: npt.NDArray[Any], header: Declared[Datatype]) -> npt.NDArray[Any] | None:
    """A flat buffer of numbers (int64 when every literal is an integer, else float64) as the
    header's datatype when :func:`to_array` would accept them and give the same array; None
    when only the Python values can tell."""
    row = header.wire_type
    if values.size != header.elements or row.name in ("BOOL", BYTES):
        return None
    if row.numpy.kind in "iu":
        if values.dtype.kind != "i":
            return None
        info = np.iinfo(row.numpy)
        if values.size and (values.min() < info.min or values.max() > info.max):
            return None
        return values.astype(row.numpy)
    return values.astype(np.float64, copy=False).astype(row.numpy)


def _too_big(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check(leaves: list[Any], header: Declared[Datatype], ok: Any, what: str) -> None:
    for index, value in enumerate(leaves):
        if not ok(value):
            raise InvalidArgument(
                f"input '{header.name}': value {index} ({_show(value)}) of a "
                f"{header.wire_type.name} tensor is not {what}"
            )


def _integers(leaves: list[Any], row: Datatype, header: Declared[Datatype]) -> npt.NDArray[Any]:
    info = np.iinfo(row.numpy)
    for value in leaves:
        if not info.min <= value <= info.max:
            raise InvalidArgument(
                f"input '{header.name}': value {value} is out of range for {row.name} "
                f"[{info.min}, {info.max}]"
            )
    return _chunked(leaves, row.numpy)


CHUNK_ELEMENTS = 1 << 16
"""Values converted per numpy call (a few ms each): between calls a thread converting a large
body (:func:`gateway.v2.rest.request_body.parse_converted`) lets the GIL go."""


def _chunked(leaves: list[Any], dtype: Any) -> npt.NDArray[Any]:
    if len(leaves) <= CHUNK_ELEMENTS:
        return np.array(leaves, dtype=dtype)
    flat = np.empty(len(leaves), dtype=dtype)
    for start in range(0, len(leaves), CHUNK_ELEMENTS):
        flat[start : start + CHUNK_ELEMENTS] = leaves[start : start + CHUNK_ELEMENTS]
    return flat


def _utf8(value: str, header: Declared[Datatype]) -> bytes:
    try:
        return value.encode()
    except UnicodeEncodeError:  # a lone surrogate from a "\udXXX" escape
        raise InvalidArgument(f"input '{header.name}': a string is not valid Unicode") from None


def _show(value: Any) -> str:
    if isinstance(value, dict | list):  # may nest past orjson's depth: name its kind
        return "an object" if isinstance(value, dict) else "an array"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value) if isinstance(value, float) else _json_text(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # a lone surrogate
        return ascii(value)


_LITERALS = {True: "Infinity", False: "-Infinity"}


def to_json(array: npt.NDArray[Any], row: Datatype) -> Any:
    """An output's flat ``data``: a list, or an ``orjson.Fragment`` for floats with non-finite
    values. NotText for a BYTES element that is not UTF-8."""
    flat = np.asarray(array).reshape(-1)
    if row.name == BYTES:
        try:
            return [v.decode() if isinstance(v, bytes) else str(v) for v in flat.tolist()]
        except UnicodeDecodeError:
            raise NotText(row.name) from None
    if row.numpy.kind != "f" and row.name not in ("FP16", "BF16"):
        return flat.astype(row.numpy, copy=False).tolist()
    values = flat.astype(np.float64)
    if bool(np.isfinite(values).all()):
        return values.tolist()
    items = [
        ("NaN" if math.isnan(v) else _LITERALS[v > 0]) if not math.isfinite(v) else repr(v)
        for v in values.tolist()
    ]
    return orjson.Fragment(("[" + ",".join(items) + "]").encode())
