"""``inference.ModelInferRequest`` → an :class:`~gateway.v2.call.InferCall` and numpy inputs
(numpy outputs → ``inference.ModelInferResponse`` bytes: :mod:`gateway.v2.response_wire`).

**Request.**
An input's values come either from its typed ``contents`` (the field of its datatype, see
:mod:`gateway.v2.datatypes`) or from ``raw_input_contents`` (one entry per input, in the order of
``inputs``, layout of :mod:`gateway.v2.raw`) — never both in one request. Checks, in order, all
before any value is decoded (Triton's texts where it has them):

1. ``raw_input_contents`` given and an input has ``contents``: INVALID_ARGUMENT "contents field
   must not be specified when using raw_input_contents for 'x' for model 'm'"; a count of raw
   entries other than the number of inputs: INVALID_ARGUMENT; an input named twice;
2. each input's header and its bounds, then the decoded size of all inputs (RESOURCE_EXHAUSTED;
   :mod:`gateway.v2.declared`), as the core validates them against the signature;
3. per input, once the core has validated every header: raw bytes of exactly the declared
   size; typed values only in the datatype's field (FP16 and BF16 have none: raw only), exactly
   one per element, within the datatype's range (INT8/INT16 in ``int_contents``, UINT8/UINT16
   in ``uint_contents``); no data at all for a non-empty tensor is "unable to find data for input
   tensor 'x' for model 'm' in request."

**Response** (written by :mod:`gateway.v2.response_wire`). As Triton answers (and as
``tritonclient``'s ``InferResult.as_numpy`` requires: it reads numeric outputs only from raw
bytes), every output's values go in ``raw_output_contents``, one entry per output in the order of
``outputs``, never in typed ``contents``, whatever form the request used. The response carries
the model name, the version that served as a decimal string, and the request's ``id``; it has no
parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gateway._pb.inference.grpc_service_pb2 import (
    InferTensorContents,
    ModelInferRequest,
)
from gateway.decoding import Declared, narrowed
from gateway.errors import InvalidArgument
from gateway.v2 import parameters, raw
from gateway.v2.call import InferCall, RequestedOutput
from gateway.v2.datatypes import BYTES, Datatype
from gateway.v2.declared import DeclaredInputs, Limits, Wire
from gateway.v2.versions import target

_FIELDS = tuple(f.name for f in InferTensorContents.DESCRIPTOR.fields)
NO_OPTIONS = parameters.request_options({})
"""The options of a request without parameters."""


def infer_call(request: ModelInferRequest) -> InferCall:
    """The request's header: target, id, options and requested outputs. INVALID_ARGUMENT for a
    bad parameter; UNIMPLEMENTED for a shared-memory or classification tensor parameter."""
    given = request.parameters  # most requests carry none: nothing to read
    options = parameters.request_options(parameters.from_proto(given)) if given else NO_OPTIONS
    for tensor in request.inputs:
        if tensor.parameters:
            values = parameters.from_proto(tensor.parameters)
            parameters.check_tensor(values, f"input '{tensor.name}'")
    outputs = []
    for output in request.outputs:
        if output.parameters:
            values = parameters.from_proto(output.parameters)
            parameters.check_tensor(values, f"output '{output.name}'")
        outputs.append(RequestedOutput(output.name))
    return InferCall(
        target(request.model_name, request.model_version), request.id, options, tuple(outputs)
    )


def infer_inputs(request: ModelInferRequest, limits: Limits) -> DeclaredInputs[Any]:
    """The request's inputs for the core (see the module docstring); INVALID_ARGUMENT at once
    for contents beside ``raw_input_contents`` or a raw entry count that is not the inputs'."""
    raw_contents = request.raw_input_contents
    if raw_contents:
        for tensor in request.inputs:
            if tensor.HasField("contents"):
                raise InvalidArgument(
                    "contents field must not be specified when using raw_input_contents for "
                    f"'{tensor.name}' for model '{request.model_name}'"
                )
        if len(raw_contents) != len(request.inputs):
            raise InvalidArgument(
                f"raw_input_contents has {len(raw_contents)} entries for "
                f"{len(request.inputs)} inputs; it needs one per input, in order"
            )
        wire = [
            Wire(t.name, t.datatype, t.shape, payload)
            for t, payload in zip(request.inputs, raw_contents, strict=True)
        ]
        return DeclaredInputs(wire, limits, _wire_bytes, raw.from_raw)
    model = request.model_name
    typed = [Wire(t.name, t.datatype, t.shape, t.contents) for t in request.inputs]

    def convert(header: Declared[Datatype], contents: InferTensorContents) -> npt.NDArray[Any]:
        return _from_typed(contents, header, model)

    return DeclaredInputs(typed, limits, _wire_bytes, convert)


def _wire_bytes(item: Wire[Any]) -> int:
    if isinstance(item.payload, bytes):
        return len(item.payload)
    if item.datatype == BYTES:
        return sum(len(value) for value in item.payload.bytes_contents)
    return 0


def _from_typed(
    contents: InferTensorContents, header: Declared[Datatype], model: str
) -> npt.NDArray[Any]:
    row = header.wire_type
    present = [name for name in _FIELDS if len(getattr(contents, name))]
    stray = [name for name in present if name != row.field]
    if stray:
        where = "raw_input_contents only" if row.field is None else f"contents.{row.field}"
        raise InvalidArgument(
            f"input '{header.name}': {row.name} data goes in {where}, got contents.{stray[0]}"
        )
    if row.field is None or not present:
        if header.elements == 0:
            return np.empty(header.shape, dtype=row.numpy)
        raise InvalidArgument(
            f"unable to find data for input tensor '{header.name}' for model '{model}' in request."
        )
    values = getattr(contents, row.field)
    if len(values) != header.elements:
        raise InvalidArgument(
            f"input '{header.name}': expected {header.elements} values in contents.{row.field} "
            f"for shape {list(header.shape)}, got {len(values)}"
        )
    flat: npt.NDArray[Any]
    if row.field == "bytes_contents":
        flat = np.empty(header.elements, dtype=object)
        flat[:] = list(values)
    elif row.field in ("int_contents", "uint_contents") and row.numpy.itemsize < 4:
        flat = narrowed(values, row.numpy, header, f"input '{header.name}': contents.{row.field}")
    else:
        flat = np.array(values, dtype=row.numpy)
    return flat.reshape(header.shape)
