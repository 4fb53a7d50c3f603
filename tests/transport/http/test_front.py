"""The REST front door's per-request parse, shared by the observing middleware and the server."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from gateway.errors import InvalidArgument
from gateway.transport.http.front import parse_once


def test_a_request_is_parsed_once_and_refusals_are_not_kept() -> None:
    request = make_mocked_request("POST", "/v1/models/m/versions/2:predict")
    first = parse_once(request, "/v1/models/m/versions/2:predict")
    assert (first.model, first.version, first.verb) == ("m", 2, "predict")
    assert parse_once(request, "/v1/models/other:predict") is first
    bad = make_mocked_request("POST", "/v1/models/m:nope")
    for _ in range(2):
        with pytest.raises(InvalidArgument):
            parse_once(bad, "/v1/models/m:nope")
