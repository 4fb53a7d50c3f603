"""The HTTP server's route table: what each protocol registers, and what one API call is.

A request's path (raw, without the query) is looked up once, in order:

1. an **exact route** (:meth:`Routes.add_exact`: the metrics page, say): its handler answers any
   method, and the call is not an API call (no admission bound, no observation);
2. the probes ``/healthz`` and ``/readyz``, which the server answers itself;
3. the first registered **API** (:class:`HttpApi`) that owns the path (TF Serving's ``/v1/``, any
   case): the API parses the request line with its own URL grammar, once, into an
   :class:`ApiCall` that the server, the observer and the API's handler share;
4. anything else is 404.

An :class:`ApiCall` carries the call's neutral meaning (protocol, API method name, model,
version, URL template) for observability, and the API's own parse (``detail``) for its handler.
A request line outside the API's grammar still makes a call (API :data:`UNKNOWN_API`) whose
``refusal`` is raised only when the call is served: the bearer token, draining and the
concurrency bound are checked first, as before any other API call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from aiohttp import web

from gateway.transport.http.bounds import CallBounds

UNKNOWN_API = "unknown"
"""The API name of a call whose request line is outside its API's grammar."""

D = TypeVar("D")

ExtraRoute = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
"""Handles one exact raw path (any method); an :class:`~gateway.transport.http.front.HttpError` it
raises is its answer, any other error becomes 500 ``{"error": ...}``."""


@dataclass(frozen=True, slots=True)
class ApiCall(Generic[D]):
    """One API call, as its API parsed the request line.

    ``protocol``: the API's protocol (``"tfserving"``). ``api``: the method name the call maps to
    (``"Predict"``, ``"GetModelStatus"``, ...; :data:`UNKNOWN_API` outside the grammar). ``model``:
    the model the URL names ("" if none); ``version``: the version it names (None if none).
    ``route``: the URL template (OpenTelemetry's ``http.route``; "" outside the grammar).
    ``refusal``: why the request line is refused (raised when the call is served), else None.
    ``detail``: the API's own parse, for its handler (None when refused).
    """

    protocol: str
    api: str
    model: str = ""
    version: int | None = None
    route: str = ""
    refusal: Exception | None = None
    detail: D | None = None


class HttpApi(Protocol[D]):
    """One protocol's REST API, registered with :meth:`Routes.add_api`."""

    def owns(self, path: str) -> bool:
        """True for the raw paths (without the query) this API answers, whatever the method."""
        ...

    def parse(self, method: str, path: str) -> ApiCall[D]:
        """The call a request line makes; never raises (a refusal is kept in the call)."""
        ...

    async def serve(
        self, request: web.BaseRequest, call: ApiCall[D], bounds: CallBounds
    ) -> web.StreamResponse:
        """Answer ``call`` (its refusal is None). ``bounds`` reads the body and keeps the
        deadline. Failures raise :class:`~gateway.errors.ServingError` (or
        :class:`~gateway.transport.http.front.HttpError`)."""
        ...


Answer = Callable[[], Awaitable[web.StreamResponse]]
"""The rest of one API call's handling: authentication, admission, the API's handler."""

Observe = Callable[[web.BaseRequest, ApiCall[Any], Answer], Awaitable[web.StreamResponse]]
"""Wraps each API call (observability): ``await observe(request, call, answer)`` must return
what ``await answer()`` returns. Exact routes and probes are not API calls."""


class Routes:
    """The exact routes and the APIs of one HTTP server (see the module doc)."""

    def __init__(self) -> None:
        self._exact: dict[str, ExtraRoute] = {}
        self._apis: list[HttpApi[Any]] = []

    def add_exact(self, path: str, handler: ExtraRoute) -> None:
        """Answer the raw path ``path`` (exactly) with ``handler``, before any API."""
        if path in self._exact:
            raise ValueError(f"{path} is routed twice")
        self._exact[path] = handler

    def add_api(self, api: HttpApi[Any]) -> None:
        """Answer the paths ``api`` owns (the first API registered wins)."""
        self._apis.append(api)

    def exact(self, path: str) -> ExtraRoute | None:
        return self._exact.get(path)

    def api_for(self, path: str) -> HttpApi[Any] | None:
        """The API owning ``path``, or None."""
        for api in self._apis:
            if api.owns(path):
                return api
        return None
