"""The REST front door: what a request goes through before it is served (the gRPC side is
:mod:`gateway.transport.gate`).

1. **Authentication** (``--auth_token_file``): ``Authorization: Bearer <token>`` unless the path
   is open (or a public exact route: the docs pages' HTML and assets); else 401.
2. **Draining**: API calls get 503 with ``Retry-After`` (probes and exact routes still answer).
3. **Admission**: at most ``max_concurrent`` API calls at once (0: no bound); the next gets 503
   with ``Retry-After`` at once.
4. **Methods**: ``/healthz`` and ``/readyz`` answer GET and HEAD, else ``405 {"error": ...}`` with
   ``Allow``; an API's grammar decides its own paths' methods (its refusals are kept in the
   :class:`~gateway.transport.http.routes.ApiCall` and may be an :class:`HttpError` 405).
"""

from __future__ import annotations

from gateway.transport.auth import BearerTokens
from gateway.transport.call_admission import CallAdmission
from gateway.transport.http.http_messages import HttpResponse
from gateway.transport.http.json_error import error_response

PROBE_METHODS = ("GET", "HEAD")


class HttpError(Exception):
    """An answer of the HTTP layer with no canonical code (405, 408). ``close``: the connection
    closes after it (a body left unread)."""

    def __init__(self, status: int, message: str, *, close: bool = False, **headers: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close
        self.headers = headers

    def response(self) -> HttpResponse:
        response = error_response(self.status, self.message, **self.headers)
        response.close = self.close
        return response


def check_probe_method(method: str, path: str) -> None:
    """HttpError 405 (with ``Allow``) for a probe (or another GET-only route: the API docs) asked
    with a method other than GET or HEAD. ``path`` is the route's own (never the request's
    bytes)."""
    if method not in PROBE_METHODS:
        raise HttpError(405, f"{path} answers GET and HEAD, not {method}", Allow="GET, HEAD")


class Front(CallAdmission):
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
        self.in_flight += 1
