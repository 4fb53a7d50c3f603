"""The REST front door's checks, in process: tokens, draining and the bound, the probes' methods."""

from __future__ import annotations

import json

import pytest

from gateway.errors import Code, ServingError, Unauthenticated
from gateway.transport.auth import BearerTokens
from gateway.transport.http.front import Front, HttpError, check_probe_method


def test_only_open_paths_go_without_a_token() -> None:
    front = Front(auth=BearerTokens(["t"], open_paths=["/healthz"]))
    front.authenticate("/healthz", None)
    front.authenticate("/v1/models/m", "Bearer t")
    with pytest.raises(Unauthenticated):
        front.authenticate("/v1/models/m", None)
    Front().authenticate("/v1/models/m", None)  # no tokens configured: everything is open


def test_calls_enter_until_the_bound_and_none_while_draining() -> None:
    front = Front(max_concurrent=1)
    front.enter()
    with pytest.raises(ServingError) as busy:
        front.enter()
    assert busy.value.code == Code.UNAVAILABLE and front.in_flight == 1
    front.leave()
    front.start_draining()
    with pytest.raises(ServingError, match="shutting down"):
        front.enter()
    assert front.in_flight == 0


def test_probes_answer_get_and_head_only_and_an_unread_body_closes_the_connection() -> None:
    for method in ("GET", "HEAD"):
        check_probe_method(method, "/healthz")
    with pytest.raises(HttpError) as refused:
        check_probe_method("POST", "/readyz")
    response = refused.value.response()
    assert response.headers is not None
    assert (response.status, response.headers["Allow"]) == (405, "GET, HEAD")
    assert json.loads(response.body) == {"error": "/readyz answers GET and HEAD, not POST"}
    assert not response.close  # nothing was left unread: the connection may serve on
    assert HttpError(408, "late", close=True).response().close
