"""The ``/v2`` routes' failure answers: the V2 status of each code, the JSON body, what
observability reads of it and when clients are told to retry."""

from __future__ import annotations

import json

import pytest

from gateway.errors import (
    Cancelled,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    ServingError,
    Unavailable,
    Unimplemented,
)
from gateway.v2.rest.routes import failure


@pytest.mark.parametrize(
    ("error", "status", "retry"),
    [
        (InvalidArgument("bad"), 400, False),
        (FailedPrecondition("no such signature"), 400, False),
        (Cancelled("gone"), 400, False),
        (NotFound("nope"), 404, False),
        (ResourceExhausted("too big"), 429, True),
        (Unimplemented("no"), 501, False),
        (Unavailable("later"), 503, True),
        (DeadlineExceeded("late"), 504, False),
    ],
)
def test_a_failure_answers_the_v2_status_of_its_code(
    error: ServingError, status: int, retry: bool
) -> None:
    response = failure(error)
    assert response.status == status
    assert response.content_type == "application/json"
    assert json.loads(response.body) == {"error": error.message}
    assert response.code == error.code.name
    assert ("Retry-After" in (response.headers or {})) == retry


def test_a_lone_surrogate_in_a_message_is_escaped() -> None:
    quoted = failure(InvalidArgument('bad "x"'))
    assert json.loads(quoted.body) == {"error": 'bad "x"'}
    response = failure(InvalidArgument("input '\udcff' is unknown"))
    assert json.loads(response.body) == {"error": "input '\\udcff' is unknown"}
