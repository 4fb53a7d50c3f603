"""TF Serving's REST request bodies → named tensors: body parsing, ``signature_name``, and the
row (``instances``) and columnar (``inputs``) formats. Values are typed by
:mod:`~gateway.tfserving.rest.json_values`, responses written by
:mod:`~gateway.tfserving.rest.json_response`.

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

Encoded images: an image input of the signature (:attr:`~gateway.serving.signature.Signature.
image_inputs`) given a list of ``{"b64": ...}`` objects, one per batch row, gets them as a
string tensor ``[rows]`` (each a JPEG or PNG), which the core decodes into the input's tensor::

    {"instances": [{"b64": "/9j/4AAQ..."}, {"b64": "iVBORw0K..."}]}    → images: string[2]
    {"inputs": {"images": [{"b64": "/9j/4AAQ..."}]}}                   → images: string[1]

Nesting must be dense: every list at one depth has the length of the first one there, and values sit
at the depth of the first element's innermost value. Violations are INVALID_ARGUMENT naming the
place, e.g. ``instances[1]: list of 1 values where 2 were expected ...``. Each tensor's shape, and
the decoded bytes of the tensors so far, are bounded by :mod:`gateway.decoding`'s rules before its
values are converted (a string's own bytes are not known until then: they count 0).

Parsing uses orjson; a body orjson rejects (``NaN``/``Infinity``, or a syntax error) is re-parsed by
the standard library, which accepts those literals and reports syntax errors with their offset.
A predict body of :data:`NUMBERS_BYTES` or more is first read by :mod:`gateway.json_numbers`
(``loads(..., tensors=True)``): a dense array of numbers at a tensor's place (``instances``,
``inputs``, ``inputs.<name>``) goes straight into one buffer and becomes the tensor with numpy,
by the same rules; whatever that reader cannot vouch for takes the path above, with its
messages. A body over :data:`OFF_LOOP_BYTES` is read in a thread (:func:`read_off_loop`).
"""

from __future__ import annotations

import enum
import itertools
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import orjson

from channel.dtypes import DTYPE_NAMES, numpy_dtype
from gateway import json_numbers
from gateway.decoding import MAX_RANK, check_total, declare
from gateway.errors import InvalidArgument
from gateway.json_numbers import Numbers
from gateway.serving.signature import STRING, Signature, TensorSpec
from gateway.tfserving.rest.json_values import (
    LeafWhere,
    is_b64,
    kind,
    numbers_array,
    show,
    to_array,
)

Where = Callable[[tuple[int, ...]], str]
"""Names a place in the request for error messages, given its index path inside one tensor."""


class Format(enum.Enum):
    """How the request carried its tensors; the response answers in the same format."""

    ROW = "instances"
    COLUMNAR = "inputs"


NUMBERS_BYTES = 1 << 15
"""Predict bodies of this size (32 KiB) or more are read by :mod:`gateway.json_numbers`."""
OFF_LOOP_BYTES = 1 << 20
"""Predict bodies larger than this (1 MiB) are read off the loop (:func:`read_off_loop`)."""
TENSOR_PLACES: tuple[json_numbers.Pattern, ...] = (("instances",), ("inputs",), ("inputs", str))
"""Where a predict body keeps its tensors' values."""


class _NumberTooBig(Exception):
    pass


def read_off_loop(body: bytes) -> bool:
    """Whether a predict body is read (:func:`loads` with ``tensors``) in a thread: over
    :data:`OFF_LOOP_BYTES`, so the front end's loop serves other calls meanwhile."""
    return len(body) > OFF_LOOP_BYTES


def loads(body: bytes, *, tensors: bool = False) -> dict[str, Any]:
    """Parse a request body that must be a JSON object; INVALID_ARGUMENT saying what is wrong.
    ``tensors`` (a predict body): its dense arrays of numbers may come as
    :class:`~gateway.json_numbers.Numbers`, which :func:`predict_inputs` takes."""
    if not body:
        raise InvalidArgument("JSON Parse error: The document is empty")
    if tensors and len(body) >= NUMBERS_BYTES:
        document = json_numbers.read(body, TENSOR_PLACES, dense=True)
        if document is not None:
            return document  # type: ignore[no-any-return]
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        document = _loads_extended(body)
    if not isinstance(document, dict):
        raise InvalidArgument(f"JSON Value: {show(document)} Is not object")
    return document


def _loads_extended(body: bytes) -> Any:
    """The standard library's parser: it accepts ``NaN``, ``Infinity`` and ``-Infinity``."""
    try:
        return json.loads(body, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"JSON Parse error: {exc.msg} at offset: {exc.pos}") from None
    except _NumberTooBig as exc:
        raise InvalidArgument(
            f"JSON Parse error: number {_cut(str(exc))} is out of a double's range"
        ) from None
    except RecursionError:
        raise InvalidArgument("JSON Parse error: lists or objects nested too deeply") from None
    except ValueError as exc:  # not UTF-8/16/32, or an integer of over 4300 digits
        if sys.get_int_max_str_digits() and "integer string conversion" in str(exc):
            raise InvalidArgument(
                f"JSON Parse error: an integer literal has more than "
                f"{sys.get_int_max_str_digits()} digits; no tensor dtype holds such a number"
            ) from None
        raise InvalidArgument(f"JSON Parse error: {exc}") from None


def _cut(text: str, chars: int = 40) -> str:
    return text if len(text) <= chars else text[:chars] + "..."


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NumberTooBig(text)
    return value


def signature_name(request: Mapping[str, Any]) -> str:
    """The request's ``signature_name`` ("" when absent: the default signature)."""
    name = request.get("signature_name", "")
    if not isinstance(name, str):
        raise InvalidArgument(f"'signature_name' must be a string value, got {show(name)}")
    return name


def predict_inputs(
    request: Mapping[str, Any],
    signature: Signature,
    *,
    max_elements: int,
    max_bytes: int | None = None,
) -> tuple[dict[str, np.ndarray], Format]:
    """Decode a predict request's tensors (``instances`` or ``inputs``) for ``signature``.

    ``max_bytes``: most bytes the decoded tensors may take together, checked from their shapes
    before their values are converted (RESOURCE_EXHAUSTED); None: no bound.
    """
    specs = signature.inputs
    if not specs:
        raise InvalidArgument(f"Failed to get input map for signature: {signature.name}")
    if Format.ROW.value in request and Format.COLUMNAR.value in request:
        raise InvalidArgument(
            "Not formatted correctly: expecting only one of 'inputs' or 'instances' keys to exist"
        )
    limits = _Limits(max_elements, max_bytes, signature.image_inputs)
    if Format.ROW.value in request:
        return _from_instances(request[Format.ROW.value], specs, limits), Format.ROW
    if Format.COLUMNAR.value in request:
        return _from_inputs(request[Format.COLUMNAR.value], specs, limits), Format.COLUMNAR
    raise InvalidArgument("Missing 'inputs' or 'instances' key")


class _Limits:
    """The bounds of one request, the decoded bytes its tensors so far take, and the inputs
    that take encoded images."""

    def __init__(
        self, max_elements: int, max_bytes: int | None, images: frozenset[str] = frozenset()
    ) -> None:
        self.max_elements = max_elements
        self.max_bytes = max_bytes
        self.images = images
        self.used_bytes = 0


def _is_named(value: Any) -> bool:
    """An object of named tensors (as opposed to a value, a list or a ``{"b64": ...}``)."""
    return type(value) is dict and not is_b64(value)


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
    instances: Any, specs: Sequence[TensorSpec], limits: _Limits
) -> dict[str, np.ndarray]:
    if type(instances) is Numbers:
        if instances.shape[0] and len(specs) == 1:
            return {specs[0].name: to_tensor(instances, specs[0], _path("instances"), limits)}
        instances = instances.python()  # the messages of the rules below
    if type(instances) is not list:
        raise InvalidArgument(f"Expecting 'instances' to be a list/array, got {kind(instances)}")
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
        return {spec.name: to_tensor(instances, spec, _path("instances"), limits)}
    expected = {spec.name for spec in specs}
    columns: dict[str, list[Any]] = {spec.name: [] for spec in specs}
    for index, item in enumerate(instances):
        if not _is_named(item):
            raise InvalidArgument(
                f"Expecting object but got {kind(item)} at item {index} of 'instances'"
            )
        if item.keys() != expected:
            raise InvalidArgument(
                f"Failed to process element: {index} of 'instances' list. JSON object: "
                f"{show(item)} must only have keys: {','.join(sorted(expected))}"
            )
        for name, column in columns.items():
            column.append(item[name])
    return {
        spec.name: to_tensor(columns[spec.name], spec, _row_path(spec.name), limits)
        for spec in specs
    }


def _from_inputs(
    inputs: Any, specs: Sequence[TensorSpec], limits: _Limits
) -> dict[str, np.ndarray]:
    if not _is_named(inputs):
        if len(specs) > 1:
            raise InvalidArgument(
                "inputs is a plain value/list, but expecting an object as multiple input tensors "
                f"required as per signature (inputs: {_names(specs)})"
            )
        return {specs[0].name: to_tensor(inputs, specs[0], _path("inputs"), limits)}
    tensors = {}
    for spec in specs:
        if spec.name not in inputs:
            raise InvalidArgument(f"Missing named input: {spec.name} in 'inputs' object.")
        where = _path(f'inputs["{spec.name}"]')
        tensors[spec.name] = to_tensor(inputs[spec.name], spec, where, limits)
    return tensors


_UNKNOWN = np.dtype(np.uint8)
"""Counts a tensor of a dtype no array has (refused once converted) as one byte an element."""


def to_tensor(value: Any, spec: TensorSpec, where: Where, limits: _Limits) -> np.ndarray:
    """One JSON value (a scalar or dense nested lists) → an array of ``spec``'s dtype.

    The shape follows the first element at each depth; the element count is checked against the
    element limit and the bytes against what is left of the request's byte limit before anything
    is converted.
    """
    numbers = value if type(value) is Numbers else None
    shape = _dense_shape(value) if numbers is None else numbers.shape
    images = numbers is None and spec.name in limits.images and len(shape) == 1
    if images and all(map(is_b64, value)):
        spec = replace(spec, dtype=STRING)  # encoded images, one a row (decoded by the core)
    dtype = numpy_dtype(spec.dtype) if spec.dtype in DTYPE_NAMES else _UNKNOWN
    try:
        header = declare(spec.name, spec.dtype, dtype, shape, 0, limits.max_elements)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{where(())}: {exc.message}") from None
    limits.used_bytes += header.nbytes
    check_total(limits.used_bytes, limits.max_bytes)
    if numbers is not None:
        array = numbers_array(numbers.values, spec)
        if array is not None:
            return array.reshape(shape)
        value = numbers.python()  # the rules below say what is wrong
    leaves = _flatten(value, shape, where)
    return to_array(leaves, spec, _leaf_where(where, shape)).reshape(shape)


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
                f"{where(_unravel(index, shape[:depth]))}: found {show(level[index])} where a "
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


def _leaf_where(where: Where, shape: tuple[int, ...]) -> LeafWhere:
    return lambda flat_index: where(_unravel(flat_index, shape))
