"""The REST error answers shared by every protocol."""

from __future__ import annotations

import json

from gateway.errors import NotFound, ResourceExhausted, Unavailable
from gateway.transport.http.json_error import STATUS_KEY, error_body, failure_response


def test_error_body_survives_any_message() -> None:
    assert json.loads(error_body('bad "x"\n')) == {"error": 'bad "x"\n'}
    assert json.loads(error_body("lone \ud800")) == {"error": "lone \\ud800"}


def test_failures_carry_their_status_code_name_and_retry_after_when_retryable() -> None:
    missing = failure_response(NotFound("no such model"))
    assert (missing.status, missing.content_type) == (404, "application/json")
    assert missing.body is not None
    assert json.loads(bytes(missing.body)) == {"error": "no such model"}
    assert missing[STATUS_KEY] == "NOT_FOUND" and "Retry-After" not in missing.headers
    for error, status in ((Unavailable("later"), 503), (ResourceExhausted("full"), 429)):
        response = failure_response(error)
        assert (response.status, response.headers["Retry-After"]) == (status, "1")
        assert response[STATUS_KEY] == error.code.name
