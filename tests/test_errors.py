"""The one error model: canonical codes, their gRPC and HTTP mapping (TF Serving's table), the
messages clients match on, and errors as plain data across processes."""

from __future__ import annotations

import grpc
import pytest

from gateway import errors
from gateway.errors import (
    MAX_MESSAGE_CHARS,
    TRUNCATED_SUFFIX,
    Code,
    InvalidArgument,
    NotFound,
    ServingError,
    from_wire,
    grpc_status,
    http_status,
    servable_not_found,
    truncate,
)

HTTP = {
    "OK": 200,
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
    "UNAUTHENTICATED": 401,
}
"""TF Serving's REST status for each canonical code (``util/net_http``'s ToHTTPStatusCode)."""

SUBCLASSES = {
    "InvalidArgument": Code.INVALID_ARGUMENT,
    "NotFound": Code.NOT_FOUND,
    "FailedPrecondition": Code.FAILED_PRECONDITION,
    "ResourceExhausted": Code.RESOURCE_EXHAUSTED,
    "Unavailable": Code.UNAVAILABLE,
    "DeadlineExceeded": Code.DEADLINE_EXCEEDED,
    "Cancelled": Code.CANCELLED,
    "Unimplemented": Code.UNIMPLEMENTED,
    "Internal": Code.INTERNAL,
    "Unauthenticated": Code.UNAUTHENTICATED,
}


def test_codes_are_grpcs_numbers_and_names() -> None:
    assert len(Code) == len(grpc.StatusCode) == 17
    for code in Code:
        status = grpc_status(code)
        assert status.value[0] == int(code)
        assert status.name == code.name


@pytest.mark.parametrize("code", list(Code), ids=lambda code: code.name)
def test_http_status_is_tf_servings(code: Code) -> None:
    assert http_status(code) == HTTP[code.name]


def test_each_error_class_carries_its_code() -> None:
    for name, code in SUBCLASSES.items():
        error = getattr(errors, name)("message")
        assert isinstance(error, ServingError)
        assert error.code is code and error.message == "message" and str(error) == "message"
    assert ServingError("m").code is Code.UNKNOWN
    assert ServingError("m", Code.ABORTED).code is Code.ABORTED


def test_long_messages_are_cut_and_marked() -> None:
    exact = "x" * MAX_MESSAGE_CHARS
    assert truncate(exact) == exact
    cut = truncate(exact + "y")
    assert len(cut) == MAX_MESSAGE_CHARS and cut.endswith(TRUNCATED_SUFFIX)
    assert cut == "x" * (MAX_MESSAGE_CHARS - len("...TRUNCATED")) + "...TRUNCATED"
    assert InvalidArgument(exact + "y").message == cut


def test_errors_cross_processes_as_plain_data() -> None:
    sent = NotFound("no such model")
    assert sent.to_wire() == {"code": "NOT_FOUND", "message": "no such model"}
    received = from_wire(**sent.to_wire())
    assert type(received) is NotFound and received.message == "no such model"
    aborted = from_wire("ABORTED", "raced")  # no class of its own: the base, with the code
    assert type(aborted) is ServingError and aborted.code is Code.ABORTED


def test_an_unknown_code_name_becomes_internal_and_keeps_the_name() -> None:
    error = from_wire("SEGFAULT", "worker crashed")
    assert error.code is Code.INTERNAL
    assert error.message == "SEGFAULT: worker crashed"


def test_servable_not_found_has_tf_servings_text() -> None:
    assert servable_not_found("m").message == "Servable not found for request: Latest(m)"
    assert servable_not_found("m", 3).message == "Servable not found for request: Specific(m, 3)"
    assert servable_not_found("m", 3, "stable").message == (
        "Servable not found for request: Specific(m, label stable)"
    )
    assert servable_not_found("m").code is Code.NOT_FOUND
