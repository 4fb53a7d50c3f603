"""REST ``POST /v2/models/{m}[/versions/{v}]/infer`` bodies → an InferCall and numpy inputs.

The body is the protocol's JSON inference request, optionally followed by binary tensor data
(Triton's binary data extension), ``Inference-Header-Content-Length`` giving the JSON's length::

    {"id": "42", "parameters": {"binary_data_output": true},
     "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1.5, 2.0]},
                {"name": "s", "datatype": "BYTES", "shape": [1],
                 "parameters": {"binary_data_size": 6}}],
     "outputs": [{"name": "y", "parameters": {"binary_data": true}}]}
    <6 bytes: 02 00 00 00 'h' 'i'>

- Each input gives exactly one of ``data`` (see :mod:`gateway.v2.rest.json_values`) and the
  ``binary_data_size`` parameter (its raw bytes follow the JSON, inputs in order, layout of
  :mod:`gateway.v2.raw`); the binary sizes must add up to the bytes after the JSON exactly.
- Without the header the whole body is JSON (an empty body is INVALID_ARGUMENT, whatever its
  ``Content-Type``). The header is read once per request (:func:`header_length`); one that is not
  an integer in [0, body length] is INVALID_ARGUMENT (Triton's texts).
- An image input of the model (:attr:`~gateway.serving.signature.Signature.image_inputs`) takes
  BYTES ``[rows]``, one JPEG or PNG per row, which the core decodes into its tensor: as binary
  data (the extension's layout: each image's 4-byte length, then its bytes), or as JSON
  ``data`` whose strings are each image's base64 (JSON strings cannot carry binary data).
- Header ``0`` is Triton's raw binary request (an empty body: INVALID_ARGUMENT "input byte size
  mismatch", Triton's): the body is the raw bytes of a one-input model's
  only input, its shape the signature's with a leading ``-1`` taken as 1 (batch of one) unless it
  is the only dynamic dimension, then deduced from the byte size; BYTES: one element. Every
  output is then returned as binary data.
- ``outputs`` (optional): ``{"name": ..., "parameters": {"binary_data": bool}}``; absent: all
  outputs, each as JSON unless ``binary_data_output`` is true.

A body larger than :data:`OFF_LOOP_BYTES` (not a raw binary request) is read by
:func:`parse_converted` in a thread: the parse, then each JSON input's values converted for its
own header (an error is kept for the core to raise in its turn, after the model's lookup), so the
front end's loop answers other connections meanwhile; what still holds it is orjson's parse of
the JSON, which takes the GIL throughout. The binary data extension holds it for neither.

The JSON parser is orjson; a body it refuses is re-read by the standard library, which takes the
``NaN`` / ``Infinity`` literals (``tritonclient`` may send them) and integers past 64 bits, and
reports syntax errors. JSON of :data:`NUMBERS_BYTES` or more is first read by
:mod:`gateway.json_numbers`: an input's ``data`` of numbers only goes straight into one buffer
(no Python object per number), converted with numpy by the same rules; what that reader cannot
vouch for takes the path above. Hostile documents are INVALID_ARGUMENT before anything runs:
nesting past the parser's depth (orjson's 1,024 levels, the standard library's recursion
limit), an ``id`` that is not valid Unicode (a lone ``\\ud800`` escape: it could not be echoed),
numbers out of their datatype's range (:mod:`gateway.v2.rest.json_values`) or of a parameter's
(:mod:`gateway.v2.parameters`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import orjson

from gateway import json_numbers
from gateway.decoding import Declared, check_total, encodable_utf8
from gateway.errors import InvalidArgument, ServingError
from gateway.serving.signature import Signature
from gateway.v2 import parameters, raw
from gateway.v2.call import InferCall, RequestedOutput
from gateway.v2.datatypes import BYTES, Datatype, for_dtype_name
from gateway.v2.declared import DeclaredInputs, Limits, Wire, declare_input
from gateway.v2.parameters import RequestOptions
from gateway.v2.rest import json_values
from gateway.v2.version_strings import target

INFER_HEADER: Final = "Inference-Header-Content-Length"
OFF_LOOP_BYTES: Final = 1 << 20
"""Bodies larger than this (1 MiB) are parsed and converted off the loop (:func:`read_off_loop`)."""
NUMBERS_BYTES: Final = 1 << 15
"""JSON of this size (32 KiB) or more is read by :mod:`gateway.json_numbers` first."""
TENSOR_PLACES: Final[tuple[json_numbers.Pattern, ...]] = (("inputs", int, "data"),)
"""Where an infer request keeps its tensors' values."""
_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class RestInput:
    """One input as the body gives it: header fields, and ``data`` or its binary bytes."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    data: Any = None
    binary: memoryview | None = None
    converted: npt.NDArray[Any] | ServingError | None = None
    """``data`` already converted for this input's own header, or why it could not be
    (:func:`parse_converted`); ``data`` is then None."""
    converted_bytes: int = 0
    """The bytes of a converted BYTES input's elements, counted with the conversion (off the
    loop) for the core's byte bound."""


@dataclass(frozen=True)
class RestInfer:
    """A parsed infer body: the call, and its inputs (none for a raw binary request)."""

    call: InferCall
    inputs: tuple[RestInput, ...]
    raw_body: memoryview | None = None
    """The whole body of a raw binary request (``Inference-Header-Content-Length: 0``)."""


def header_length(value: str | None, body_length: int) -> int | None:
    """The ``Inference-Header-Content-Length`` header's value, None when it is absent;
    INVALID_ARGUMENT when it is not an integer (ASCII digits, a sign, spaces around) in
    [0, ``body_length``]. Read once per request: the JSON bound, :func:`read_off_loop` and
    :func:`parse_infer` take its answer."""
    if value is None:
        return None
    text = value.strip()
    try:
        length = int(text) if _INTEGER.fullmatch(text) else None
    except ValueError:  # past int()'s digit limit
        length = None
    if length is None:
        raise InvalidArgument(f"Unable to parse {INFER_HEADER}, got: {value}")
    if not 0 <= length <= body_length:
        raise InvalidArgument(
            f"inference header size should be in range (0, {body_length}), got: {value}"
        )
    return length


def parse_infer(body: bytes, header_length: int | None, model: str, version: str) -> RestInfer:
    """Parse an infer body (``header_length``: :func:`header_length`'s answer for it)."""
    view = memoryview(body)
    if not body and header_length is None:
        raise InvalidArgument(
            f"the inference request is empty (a JSON body, or {INFER_HEADER} and binary data)"
        )
    length = len(body) if header_length is None else header_length
    if length == 0:
        options = RequestOptions(binary_data_output=True)
        return RestInfer(InferCall(target(model, version), "", options), (), view)
    document = _json(bytes(view[:length]) if length < len(body) else body)
    if not isinstance(document, dict):
        raise InvalidArgument("the inference request must be a JSON object")
    request_id = document.get("id", "")
    if not isinstance(request_id, str):
        raise InvalidArgument("'id' must be a string")
    if not encodable_utf8(request_id):
        raise InvalidArgument("'id' must be valid Unicode (it holds a lone surrogate)")
    options = parameters.request_options(
        parameters.from_json(document.get("parameters"), "request")
    )
    inputs = _inputs(document.get("inputs"), view[length:], model)
    outputs = tuple(_output(item, index) for index, item in enumerate(_list(document, "outputs")))
    return RestInfer(InferCall(target(model, version), request_id, options, outputs), inputs)


def read_off_loop(body: bytes, header_length: int | None) -> bool:
    """Whether a body is read with :func:`parse_converted` in a thread: over
    :data:`OFF_LOOP_BYTES`, and not a raw binary request (whose bytes are a view)."""
    return len(body) > OFF_LOOP_BYTES and header_length != 0


def parse_converted(
    body: bytes, header_length: int | None, model: str, version: str, limits: Limits
) -> RestInfer:
    """:func:`parse_infer`, then each JSON input's values converted
    (:mod:`gateway.v2.rest.json_values`) for the header it declares; a header or value the core
    would refuse is left for it."""
    parsed = parse_infer(body, header_length, model, version)
    return replace(parsed, inputs=tuple(_converted(item, limits) for item in parsed.inputs))


def _converted(item: RestInput, limits: Limits) -> RestInput:
    if item.binary is not None:
        return item
    try:
        header = declare_input(item.name, item.datatype, item.shape, limits)
        check_total(header.nbytes, limits.max_bytes)
    except ServingError:
        return item  # the core says it, in its turn
    try:
        converted = json_values.to_array(item.data, header)
    except ServingError as exc:
        return replace(item, data=None, converted=exc)
    nbytes = 0
    if item.datatype == BYTES:
        elements: list[bytes] = converted.ravel().tolist()
        nbytes = sum(len(v) for v in elements)
    return replace(item, data=None, converted=converted, converted_bytes=nbytes)


def _json(text: bytes) -> Any:
    if len(text) >= NUMBERS_BYTES:
        document = json_numbers.read(text, TENSOR_PLACES)
        if document is not None:
            return document
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except RecursionError:
        raise InvalidArgument("the inference request is nested too deeply to be read") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidArgument(f"the inference request is not valid JSON: {exc}") from None


def _list(document: dict[str, Any], key: str) -> list[Any]:
    value = document.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise InvalidArgument(f"'{key}' must be an array of objects")
    return value


def _inputs(items: Any, binary: memoryview, model: str) -> tuple[RestInput, ...]:
    if items is None:
        raise InvalidArgument("the inference request has no 'inputs'")
    inputs = []
    offset = 0
    for index, item in enumerate(_list({"inputs": items}, "inputs")):
        name = _string(item, "name", f"inputs[{index}]")
        where = f"input '{name}'"
        datatype = _string(item, "datatype", where)
        shape = item.get("shape")
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in shape
        ):
            raise InvalidArgument(f"{where}: 'shape' must be an array of integers")
        values = parameters.from_json(item.get("parameters"), where)
        parameters.check_tensor(values, where)
        size = values.get(parameters.BINARY_DATA_SIZE)
        if ("data" in item) == (size is not None):
            got = "set 'data' and 'binary_data_size'" if "data" in item else "no field is set"
            raise InvalidArgument(
                f"{where}: an input must set exactly one of 'data' and 'binary_data_size' in "
                f"'parameters', but {got}"
            )
        if size is None:
            inputs.append(RestInput(name, datatype, tuple(shape), data=item["data"]))
            continue
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidArgument(f"{where}: 'binary_data_size' must be an integer >= 0")
        if offset + size > len(binary):
            raise InvalidArgument(
                f"unexpected size for input '{name}', expecting {size} bytes of binary data, "
                f"{len(binary) - offset} remain for model '{model}'"
            )
        inputs.append(
            RestInput(name, datatype, tuple(shape), binary=binary[offset : offset + size])
        )
        offset += size
    if offset != len(binary):
        raise InvalidArgument(f"unexpected additional input data for model '{model}'")
    return tuple(inputs)


def _string(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise InvalidArgument(f"{where}: '{key}' must be a string")
    return value


def _output(item: dict[str, Any], index: int) -> RequestedOutput:
    name = _string(item, "name", f"outputs[{index}]")
    where = f"output '{name}'"
    values = parameters.from_json(item.get("parameters"), where)
    parameters.check_tensor(values, where)
    return RequestedOutput(name, parameters.binary_flag(values, where))


def rest_inputs(parsed: RestInfer, signature: Signature, limits: Limits) -> DeclaredInputs[Any]:
    """The body's inputs for the core (:mod:`gateway.v2.declared`); ``signature`` gives a raw
    binary request its one input's name, datatype and shape."""
    items = parsed.inputs if parsed.raw_body is None else (_raw_input(parsed.raw_body, signature),)
    wire = [Wire(i.name, i.datatype, i.shape, i) for i in items]
    images = signature.image_inputs
    if images and any(i.name in images and i.binary is None for i in items):
        return DeclaredInputs(wire, limits, _wire_bytes, _image_converter(images))
    return DeclaredInputs(wire, limits, _wire_bytes, _convert)


def _image_converter(images: frozenset[str]) -> Callable[[Declared[Datatype], RestInput], Any]:
    """:func:`_convert`, then the base64 text of each BYTES element of an image input given as
    JSON decoded into the image's bytes (JSON strings cannot carry binary data)."""

    def convert(header: Declared[Datatype], item: RestInput) -> npt.NDArray[Any]:
        array = _convert(header, item)
        if item.binary is not None or header.name not in images or header.wire_type.name != BYTES:
            return array
        decoded = np.empty(array.shape, dtype=object)
        for index, text in enumerate(array.ravel().tolist()):
            try:
                decoded.flat[index] = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidArgument(
                    f"input '{header.name}': element {index} is not base64: an image input "
                    "takes each JSON BYTES element as the base64 of a JPEG or PNG"
                ) from None
        return decoded

    return convert


def _convert(header: Declared[Datatype], item: RestInput) -> npt.NDArray[Any]:
    if item.binary is not None:
        return raw.from_raw(header, item.binary)
    if isinstance(item.converted, ServingError):
        raise item.converted
    if item.converted is not None:
        return item.converted
    return json_values.to_array(item.data, header)


def _wire_bytes(wire: Wire[RestInput]) -> int:
    item = wire.payload
    if item.binary is not None:
        return len(item.binary)
    if item.converted is not None:
        return item.converted_bytes  # counted off the loop (0 for a kept error)
    if item.datatype == BYTES:
        return sum(len(v) for v in json_values.flatten(item.data) if isinstance(v, str))
    return 0


def _raw_input(body: memoryview, signature: Signature) -> RestInput:
    if len(signature.inputs) != 1:
        raise InvalidArgument(
            f"a raw binary request ({INFER_HEADER}: 0) needs a model with exactly one input, "
            f"this one has {len(signature.inputs)}"
        )
    (spec,) = signature.inputs
    if not body:
        raise InvalidArgument(
            f"input byte size mismatch for input '{spec.name}': a raw binary request "
            f"({INFER_HEADER}: 0) holds the input's bytes, and the body is empty"
        )
    row = for_dtype_name(spec.dtype)
    if spec.shape is None:
        raise InvalidArgument(
            f"a raw binary request cannot deduce the shape of input '{spec.name}' (unknown rank)"
        )
    dims = list(spec.shape)
    if row.name == BYTES:
        dims = [1 if d < 0 else d for d in dims]
    elif dims.count(-1) > 1 and dims[0] == -1:
        dims[0] = 1  # the batch dimension: a batch of one
    if dims.count(-1) > 1:
        raise InvalidArgument(
            f"a raw binary request cannot deduce the shape of input '{spec.name}' {spec.shape}: "
            "more than one dynamic dimension"
        )
    if -1 in dims:
        fixed = math.prod(d for d in dims if d >= 0) * row.itemsize
        dims[dims.index(-1)] = len(body) // fixed if fixed else 0
    return RestInput(spec.name, row.name, tuple(dims), binary=body)
