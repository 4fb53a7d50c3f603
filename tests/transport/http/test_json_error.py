"""The REST error answers shared by every protocol."""

from __future__ import annotations

import json

from gateway.errors import NotFound, ResourceExhausted, Unavailable
from gateway.transport.http.json_error import error_body, error_response, failure_response


def test_error_body_survives_any_message() -> None:
    assert json.loads(error_body('bad "x"\n')) == {"error": 'bad "x"\n'}
    assert json.loads(error_body("lone \ud800")) == {"error": "lone \\ud800"}


def test_failures_carry_their_status_code_name_and_retry_after_when_retryable() -> None:
    missing = failure_response(NotFound("no such model"))
    assert (missing.status, missing.content_type) == (404, "application/json")
    assert json.loads(missing.body) == {"error": "no such model"}
    assert missing.code == "NOT_FOUND"
    assert missing.headers == {"X-Content-Type-Options": "nosniff"}
    for error, status in ((Unavailable("later"), 503), (ResourceExhausted("full"), 429)):
        response = failure_response(error)
        assert response.headers is not None
        assert (response.status, response.headers["Retry-After"]) == (status, "1")
        assert response.code == error.code.name


def test_errors_are_never_sniffed_as_anything_but_json() -> None:
    """A browser given an error body that quotes something a caller sent must not run it."""
    for response in (failure_response(NotFound("<script>")), error_response(405, "<script>")):
        assert response.content_type == "application/json"
        assert response.headers is not None
        assert response.headers["X-Content-Type-Options"] == "nosniff"
