"""The route table: exact routes, then the first API that owns a path."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.routes import ApiCall, Routes


class Prefix:
    """An API owning the paths under ``prefix``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def owns(self, path: str) -> bool:
        return path.startswith(self.prefix)

    def parse(self, method: str, path: str) -> ApiCall[None]:
        return ApiCall("test", "Get")

    async def serve(
        self, request: web.BaseRequest, call: ApiCall[Any], bounds: CallBounds
    ) -> web.StreamResponse:
        return web.Response()


async def _page(request: web.BaseRequest) -> web.StreamResponse:
    return web.Response()


def test_exact_routes_and_the_first_api_that_owns_a_path() -> None:
    routes = Routes()
    first, second = Prefix("/v1/"), Prefix("/v")
    routes.add_api(first)
    routes.add_api(second)
    routes.add_exact("/v1/page", _page)
    assert routes.exact("/v1/page") is _page and routes.exact("/v1/pages") is None
    assert routes.api_for("/v1/models/m") is first
    assert routes.api_for("/v2/models/m") is second
    assert routes.api_for("/metrics") is None


def test_an_exact_path_is_routed_once() -> None:
    routes = Routes()
    routes.add_exact("/metrics", _page)
    with pytest.raises(ValueError, match="routed twice"):
        routes.add_exact("/metrics", _page)
