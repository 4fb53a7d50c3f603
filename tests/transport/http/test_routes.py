"""The route table: exact routes, then the first API that owns a path."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.http_messages import HttpRequest, HttpResponse
from gateway.transport.http.routes import KEPT_PARSES, ApiCall, Routes


class Prefix:
    """An API owning the paths under ``prefix``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def owns(self, path: str) -> bool:
        return path.startswith(self.prefix)

    def parse(self, method: str, path: str) -> ApiCall[None]:
        return ApiCall("test", "Get")

    async def serve(
        self, request: HttpRequest, call: ApiCall[Any], bounds: CallBounds
    ) -> HttpResponse:
        return HttpResponse()


async def _page(request: HttpRequest) -> HttpResponse:
    return HttpResponse()


def test_exact_routes_and_the_first_api_that_owns_a_path() -> None:
    routes = Routes()
    first, second = Prefix("/v1/"), Prefix("/v")
    routes.add_api(first)
    routes.add_api(second)
    routes.add_exact("/v1/page", _page)
    assert routes.exact("/v1/page") == (_page, False) and routes.exact("/v1/pages") is None
    assert routes.api_for("/v1/models/m") is first
    assert routes.api_for("/v2/models/m") is second
    assert routes.api_for("/metrics") is None


def test_an_exact_path_is_routed_once() -> None:
    routes = Routes()
    routes.add_exact("/metrics", _page)
    with pytest.raises(ValueError, match="routed twice"):
        routes.add_exact("/metrics", _page)


class Counting(Prefix):
    """:class:`Prefix` counting its parses; ``/bad`` paths are refused."""

    def __init__(self, prefix: str) -> None:
        super().__init__(prefix)
        self.parses = 0

    def parse(self, method: str, path: str) -> ApiCall[None]:
        self.parses += 1
        if path.startswith(self.prefix + "bad"):
            return ApiCall("test", "unknown", refusal=ValueError("bad"))
        return ApiCall("test", "Get", path)


def test_a_request_line_is_parsed_once_and_refusals_every_time() -> None:
    routes = Routes()
    api = Counting("/v1/")
    routes.add_api(api)
    first = routes.api_call("GET", "/v1/m")
    assert first is not None and first[0] is api and first[1].model == "/v1/m"
    assert routes.api_call("GET", "/v1/m") == first and api.parses == 1
    assert routes.api_call("POST", "/v1/m") is not None and api.parses == 2
    for _ in range(2):
        refused = routes.api_call("GET", "/v1/bad")
        assert refused is not None and refused[1].refusal is not None
    assert api.parses == 4
    assert routes.api_call("GET", "/elsewhere") is None


def test_kept_parses_are_bounded() -> None:
    routes = Routes()
    api = Counting("/v1/")
    routes.add_api(api)
    for n in range(KEPT_PARSES + 10):
        routes.api_call("GET", f"/v1/m{n}")
    routes.api_call("GET", "/v1/m0")
    assert api.parses == KEPT_PARSES + 11  # the first ones were let go
