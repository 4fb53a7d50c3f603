"""V2 errors: :class:`gateway.errors.Code` → gRPC status and HTTP status, in one place.

gRPC carries the canonical code itself (:func:`gateway.errors.grpc_status`: a ``google.rpc.Code``
number, as the protocol says: "errors are indicated by the google.rpc.Status returned for the
request"). HTTP follows Triton's ``HttpCodeFromError`` where Triton has the code, and
tensorgate's general table (the TF Serving API's) for codes Triton never returns; the body is
``{"error": "<message>"}`` (the protocol's ``$inference_error_response``, and the same for every
other V2 route; written by :func:`gateway.transport.http.json_error.failure_response`, as every
REST API's):

=====================  =====  =====================================================
canonical code         HTTP   why
=====================  =====  =====================================================
OK                     200
INVALID_ARGUMENT       400    Triton (bad input: datatype, shape, size, JSON, ...)
FAILED_PRECONDITION    400    Triton: codes without a direct HTTP match are 400
OUT_OF_RANGE           400    Triton
ALREADY_EXISTS         400    Triton
CANCELLED              400    Triton
UNKNOWN                400    Triton
ABORTED                400    Triton
NOT_FOUND              404    Triton (unknown model or version)
UNIMPLEMENTED          501    Triton's UNSUPPORTED (an extension tensorgate lacks)
INTERNAL, DATA_LOSS    500    Triton
UNAVAILABLE            503    Triton (queue full, draining, worker lost)
RESOURCE_EXHAUSTED     429    tensorgate (over a size bound or the in-flight budget)
DEADLINE_EXCEEDED      504    tensorgate (the deadline passed before the run)
UNAUTHENTICATED        401    tensorgate (bearer-token auth)
PERMISSION_DENIED      403    tensorgate
=====================  =====  =====================================================

Health routes are not errors: ``/v2/health/live``, ``/v2/health/ready`` and
``/v2/models/{m}[/versions/{v}]/ready`` answer 200 when true and 400 when false (Triton's), with
the protocol's JSON body (see :mod:`gateway.v2.metadata`).
"""

from __future__ import annotations

from typing import Final

from gateway.errors import Code, InvalidArgument, Unimplemented
from gateway.serving.signature import DtypeMismatch
from gateway.v2 import datatypes

_HTTP: Final[dict[Code, int]] = {
    Code.OK: 200,
    Code.INVALID_ARGUMENT: 400,
    Code.FAILED_PRECONDITION: 400,
    Code.OUT_OF_RANGE: 400,
    Code.ALREADY_EXISTS: 400,
    Code.CANCELLED: 400,
    Code.UNKNOWN: 400,
    Code.ABORTED: 400,
    Code.NOT_FOUND: 404,
    Code.UNIMPLEMENTED: 501,
    Code.INTERNAL: 500,
    Code.DATA_LOSS: 500,
    Code.UNAVAILABLE: 503,
    Code.RESOURCE_EXHAUSTED: 429,
    Code.DEADLINE_EXCEEDED: 504,
    Code.UNAUTHENTICATED: 401,
    Code.PERMISSION_DENIED: 403,
}
if _HTTP.keys() != set(Code):  # every canonical code needs a V2 HTTP status
    raise ImportError(f"no V2 HTTP status for {sorted(set(Code) - _HTTP.keys())}")

HEALTH_FALSE_STATUS: Final = 400
"""What a health or readiness route answers when the answer is "no" (Triton's)."""


def v2_http_status(code: Code) -> int:
    """The HTTP status of a V2 REST response failing with ``code``."""
    return _HTTP[code]


def not_supported(what: str) -> Unimplemented:
    """UNIMPLEMENTED for an extension tensorgate does not have, e.g. ``not_supported(
    "the system shared-memory extension")`` → "the system shared-memory extension is not
    supported by tensorgate"."""
    return Unimplemented(f"{what} is not supported by tensorgate")


def datatype_mismatch(error: DtypeMismatch) -> InvalidArgument:
    """The core's dtype mismatch (canonical dtype names) said with V2 datatype names: "input 'x'
    has datatype FP64 but the model expects FP32"."""
    if not error.name:  # only its message is known
        return InvalidArgument(error.message)
    got, expected = _datatype(error.got), _datatype(error.expected)
    return InvalidArgument(
        f"input '{error.name}' has datatype {got} but the model expects {expected}"
    )


def _datatype(dtype_name: str) -> str:
    try:
        return datatypes.datatype_of(dtype_name)
    except Unimplemented:
        return dtype_name
