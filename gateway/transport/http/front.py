"""The REST front door: what a request goes through before it is routed (the gRPC side is
:mod:`gateway.transport.gate`).

1. **Methods**: ``/healthz`` and ``/readyz`` answer GET and HEAD; an API path answers the one
   method its grammar takes (POST for ``:predict``/``:classify``/``:regress``, GET otherwise).
   Another method on such a path is ``405 {"error": ...}`` with ``Allow`` (TF Serving said
   "Malformed request"); a path the grammar does not match stays TF Serving's 400.
2. **Authentication** (``--auth_token_file``): ``Authorization: Bearer <token>`` unless the path
   is open; else 401.
3. **Draining**: API calls get 503 with ``Retry-After`` (probes and extra routes still answer).
4. **Admission**: at most ``max_concurrent`` API calls at once (0: no bound); the next gets 503
   with ``Retry-After`` at once.
"""

from __future__ import annotations

from aiohttp import web

from gateway.tfserving.rest import paths
from gateway.transport.admission import Admission
from gateway.transport.auth import BearerTokens
from gateway.transport.http.connections import error_response

PROBE_METHODS = ("GET", "HEAD")
REST_CALL = web.RequestKey("rest_call", paths.RestCall)


def parse_once(request: web.BaseRequest, path: str) -> paths.RestCall:
    """:func:`paths.parse` of ``request`` (``path``: its raw path without the query), done once
    per request: the observing middleware and the server share the result. Refusals are not
    kept."""
    call = request.get(REST_CALL)
    if call is None:
        call = request[REST_CALL] = paths.parse(request.method, path)
    return call


class HttpError(Exception):
    """An answer of the HTTP layer with no canonical code (405, 408)."""

    def __init__(self, status: int, message: str, **headers: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers

    def response(self) -> web.Response:
        return error_response(self.status, self.message, **self.headers)


def check_method(method: str, path: str, probe: bool) -> None:
    """HttpError 405 (with ``Allow``) for a method the path does not take."""
    if probe:
        if method not in PROBE_METHODS:
            raise HttpError(405, f"{path} answers GET and HEAD, not {method}", Allow="GET, HEAD")
        return
    if method in ("GET", "POST"):
        return  # the grammar decides (TF Serving's "Malformed request" for the wrong one)
    allowed = paths.allowed_method(path)
    if allowed is not None:
        raise HttpError(405, f"{path} answers {allowed}, not {method}", Allow=allowed)


class Front(Admission):
    """Authentication, draining and admission of one REST server's API calls."""

    def __init__(self, *, auth: BearerTokens | None = None, max_concurrent: int = 0) -> None:
        super().__init__(max_concurrent)
        self.auth = auth

    def authenticate(self, path: str, authorization: str | None) -> None:
        """UNAUTHENTICATED unless ``path`` is open or ``authorization`` carries a token."""
        if self.auth is not None and not self.auth.is_open(path):
            self.auth.check(authorization)

    def enter(self) -> None:
        """Count one API call in, or refuse it (UNAVAILABLE) when draining or at the limit."""
        refusal = self.refusal()
        if refusal is not None:
            raise refusal
        super().enter()
