"""V2 errors: Code → HTTP and gRPC status, and dtype mismatches in V2 datatype names."""

from __future__ import annotations

import grpc

from gateway.errors import Code, grpc_status
from gateway.v2 import errors


def test_error_table() -> None:
    assert errors.v2_http_status(Code.INVALID_ARGUMENT) == 400
    assert errors.v2_http_status(Code.NOT_FOUND) == 404
    assert errors.v2_http_status(Code.UNAVAILABLE) == 503
    assert errors.v2_http_status(Code.UNIMPLEMENTED) == 501
    assert errors.v2_http_status(Code.INTERNAL) == 500
    assert errors.v2_http_status(Code.FAILED_PRECONDITION) == 400
    assert errors.v2_http_status(Code.RESOURCE_EXHAUSTED) == 429
    assert errors.v2_http_status(Code.DEADLINE_EXCEEDED) == 504
    assert errors.v2_http_status(Code.CANCELLED) == 400
    assert {errors.v2_http_status(code) for code in Code} <= {
        200,
        400,
        401,
        403,
        404,
        429,
        500,
        501,
        503,
        504,
    }
    for code in Code:  # V2's gRPC status is the canonical code itself
        assert grpc_status(code).value[0] == int(code)
    assert grpc_status(Code.NOT_FOUND) is grpc.StatusCode.NOT_FOUND
    unsupported = errors.not_supported("the system shared-memory extension")
    assert unsupported.code == Code.UNIMPLEMENTED
    assert unsupported.message == (
        "the system shared-memory extension is not supported by tensorgate"
    )


def test_a_dtype_mismatch_in_v2_datatype_names() -> None:
    from gateway.serving.signature import DtypeMismatch

    said = errors.datatype_mismatch(DtypeMismatch.of("x", "float64", "string"))
    assert said.message == "input 'x' has datatype FP64 but the model expects BYTES"
    assert said.code == Code.INVALID_ARGUMENT
    unknown = errors.datatype_mismatch(DtypeMismatch.of("x", "complex64", "float32"))
    assert unknown.message == "input 'x' has datatype complex64 but the model expects FP32"
    rewrapped = DtypeMismatch("warmup record 1: input 'x' has dtype ...", Code.INVALID_ARGUMENT)
    assert errors.datatype_mismatch(rewrapped).message == rewrapped.message
