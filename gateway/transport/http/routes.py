"""The HTTP server's route table: what each protocol registers, and what one API call is.

A request's path (raw, without the query) is looked up once, in order:

1. an **exact route** (:meth:`Routes.add_exact`: the metrics page, say): its handler answers any
   method, and the call is not an API call (no admission bound, no observation); a *public* one
   (the docs pages' HTML and assets) needs no bearer token;
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

Parses depend on the request line alone, so the table keeps the last :data:`KEPT_PARSES`
accepted ones (:meth:`Routes.api_call`): a client calling one model again and again costs one
dictionary lookup per call, not a parse; the table is emptied when full, so hostile paths cannot
grow it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from gateway.transport.http.bounds import CallBounds
from gateway.transport.http.http_messages import HttpRequest, HttpResponse

KEPT_PARSES = 1024
UNKNOWN_API = "unknown"
"""The API name of a call whose request line is outside its API's grammar."""

D = TypeVar("D")

ExtraRoute = Callable[[HttpRequest], Awaitable[HttpResponse]]
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
        self, request: HttpRequest, call: ApiCall[D], bounds: CallBounds
    ) -> HttpResponse:
        """Answer ``call`` (its refusal is None). ``bounds`` reads the body and keeps the
        deadline. Failures raise :class:`~gateway.errors.ServingError` (or
        :class:`~gateway.transport.http.front.HttpError`)."""
        ...


Answer = Callable[[], Awaitable[HttpResponse]]
"""The rest of one API call's handling: authentication, admission, the API's handler."""

Observe = Callable[[HttpRequest, ApiCall[Any], Answer], Awaitable[HttpResponse]]
"""Wraps each API call (observability): ``await observe(request, call, answer)`` must return
what ``await answer()`` returns. Exact routes and probes are not API calls."""


class Routes:
    """The exact routes and the APIs of one HTTP server (see the module doc)."""

    def __init__(self) -> None:
        self._exact: dict[str, tuple[ExtraRoute, bool]] = {}
        self._apis: list[HttpApi[Any]] = []
        self._parsed: dict[str, tuple[HttpApi[Any], ApiCall[Any]]] = {}

    def add_exact(self, path: str, handler: ExtraRoute, *, public: bool = False) -> None:
        """Answer the raw path ``path`` (exactly) with ``handler``, before any API; ``public``:
        without a bearer token even when tokens are required."""
        if path in self._exact:
            raise ValueError(f"{path} is routed twice")
        self._exact[path] = (handler, public)

    def add_api(self, api: HttpApi[Any]) -> None:
        """Answer the paths ``api`` owns (the first API registered wins)."""
        self._apis.append(api)
        self._parsed.clear()

    def exact(self, path: str) -> tuple[ExtraRoute, bool] | None:
        """The exact route of ``path`` and whether it is public, or None."""
        return self._exact.get(path)

    def exact_paths(self) -> frozenset[str]:
        """The paths of the exact routes."""
        return frozenset(self._exact)

    def api_for(self, path: str) -> HttpApi[Any] | None:
        """The API owning ``path``, or None."""
        for api in self._apis:
            if api.owns(path):
                return api
        return None

    def api_call(self, method: str, path: str) -> tuple[HttpApi[Any], ApiCall[Any]] | None:
        """The API owning ``path`` and its parse of the request line, or None (no API owns
        it). ``path`` must be neither an exact route nor a probe."""
        key = method + " " + path
        found = self._parsed.get(key)
        if found is not None:
            return found
        api = self.api_for(path)
        if api is None:
            return None
        call = api.parse(method, path)
        if call.refusal is None:
            if len(self._parsed) >= KEPT_PARSES:
                self._parsed.clear()
            self._parsed[key] = (api, call)
        return api, call
