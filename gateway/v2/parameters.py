"""V2 parameters ⇄ Python values, and the parameters tensorgate gives a meaning to.

A parameter is a name and a ``bool``, ``int``, ``str`` or ``float`` (gRPC ``InferParameter``:
``bool_param``, ``int64_param``, ``string_param``, ``double_param``, ``uint64_param``; REST: a JSON
boolean, number or string). A gRPC parameter with no value set is INVALID_ARGUMENT.

Request parameters (``ModelInferRequest.parameters``, the REST body's ``"parameters"``):

- ``signature_name`` (string): the signature to run; absent or empty: ``serving_default``
  (tensorgate's own, as TF Serving's ``ModelSpec.signature_name``);
- ``timeout`` (int, microseconds, > 0 and ≤ 2^63−1; Triton's): the request's time budget, which
  tightens the transport's deadline;
- ``binary_data_output`` (bool; REST only, the binary data extension): default for every output;
- ``priority`` (int ≥ 0; Triton's): accepted and ignored (one priority level);
- ``sequence_id``, ``sequence_start``, ``sequence_end``: INVALID_ARGUMENT (no sequence batching);
- other names starting ``triton_``: INVALID_ARGUMENT (Triton reserves them); any other name is
  accepted and ignored (the parameters extension: custom parameters for a model).

Tensor parameters: ``binary_data_size`` on a REST input, ``binary_data`` on a requested output (see
:mod:`gateway.v2.rest.request_body`); ``shared_memory_region`` / ``_byte_size`` / ``_offset`` and an
output's ``classification`` are UNIMPLEMENTED (the extensions tensorgate does not have).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from gateway._pb.inference.grpc_service_pb2 import InferParameter
from gateway.errors import InvalidArgument, Unimplemented
from gateway.v2.versions import INT64_MAX

Value = bool | int | str | float
_T = TypeVar("_T")

SIGNATURE: Final = "signature_name"
TIMEOUT: Final = "timeout"
BINARY_DATA_OUTPUT: Final = "binary_data_output"
BINARY_DATA: Final = "binary_data"
BINARY_DATA_SIZE: Final = "binary_data_size"
_SEQUENCE: Final = frozenset({"sequence_id", "sequence_start", "sequence_end"})
_UNSUPPORTED_TENSOR: Final = {
    "shared_memory_region": "the shared-memory extension is not supported",
    "shared_memory_byte_size": "the shared-memory extension is not supported",
    "shared_memory_offset": "the shared-memory extension is not supported",
    "classification": "the classification extension is not supported",
}


@dataclass(frozen=True)
class RequestOptions:
    """What a request's parameters ask of tensorgate (see the module docstring)."""

    signature_name: str = ""
    timeout_us: int | None = None
    binary_data_output: bool = False


def from_proto(params: Mapping[str, InferParameter]) -> dict[str, Value]:
    """gRPC parameters as Python values."""
    values: dict[str, Value] = {}
    for name in params:  # a protobuf map's items() is a Python-level view: keys are not
        param = params[name]
        choice = param.WhichOneof("parameter_choice")
        if choice is None:
            raise InvalidArgument(f"parameter '{name}' has no value")
        values[name] = getattr(param, choice)
    return values


def from_json(document: Any, where: str) -> dict[str, Value]:
    """A REST ``"parameters"`` object (absent: ``{}``); INVALID_ARGUMENT for any other shape."""
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise InvalidArgument(f"{where}: 'parameters' must be an object")
    for name, value in document.items():
        if not isinstance(value, bool | int | str | float):
            raise InvalidArgument(
                f"{where}: parameter '{name}' must be a boolean, number or string"
            )
    return dict(document)


def request_options(values: Mapping[str, Value]) -> RequestOptions:
    """Read the request parameters tensorgate knows; refuse the reserved ones it cannot honour."""
    for name in values:
        if name in _SEQUENCE:
            raise InvalidArgument(f"parameter '{name}': sequence batching is not supported")
        if name.startswith("triton_"):
            raise InvalidArgument(
                f"parameter '{name}': parameter keys starting with 'triton_' are reserved"
            )
    priority = values.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int) or priority < 0:
        raise InvalidArgument("invalid value for 'priority', expected an integer >= 0")
    return RequestOptions(
        signature_name=_typed(values, SIGNATURE, str, ""),
        timeout_us=_timeout(values),
        binary_data_output=_typed(values, BINARY_DATA_OUTPUT, bool, False),
    )


def check_tensor(values: Mapping[str, Value], where: str) -> None:
    """UNIMPLEMENTED for a tensor parameter of an extension tensorgate does not have."""
    for name in values:
        reason = _UNSUPPORTED_TENSOR.get(name)
        if reason is not None:
            raise Unimplemented(f"{where}: parameter '{name}': {reason}")


def binary_flag(values: Mapping[str, Value], where: str) -> bool | None:
    """A requested output's ``binary_data`` (None when absent)."""
    if BINARY_DATA not in values:
        return None
    return _typed(values, BINARY_DATA, bool, False, where)


def _timeout(values: Mapping[str, Value]) -> int | None:
    if TIMEOUT not in values:
        return None
    timeout = values[TIMEOUT]
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 0 < timeout <= INT64_MAX:
        raise InvalidArgument(
            f"invalid value for 'timeout', expected microseconds > 0 and <= {INT64_MAX}"
        )
    return timeout


def _typed(
    values: Mapping[str, Value], name: str, kind: type[_T], default: _T, where: str = "request"
) -> _T:
    if name not in values:
        return default
    value = values[name]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise InvalidArgument(
            f"{where}: parameter '{name}' must be a {_KIND_NAMES[kind]}, got {value!r}"
        )
    return value


_KIND_NAMES: Final[dict[type, str]] = {bool: "boolean", str: "string", int: "integer"}
