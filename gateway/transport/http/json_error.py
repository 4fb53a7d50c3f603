"""The JSON error answers of every REST API, whatever the protocol: ``{"error": "<message>"}``
with the failure's HTTP status (TF Serving's, :func:`gateway.errors.http_status`, unless the
protocol maps codes its own way), ``Retry-After`` on the retryable ones (429, 503),
``X-Content-Type-Options: nosniff`` (a browser never reads an error as anything but JSON), and
the canonical code name as the answer's :attr:`~.http_messages.HttpResponse.code` for observability.
Messages never quote the request's bytes."""

from __future__ import annotations

import orjson

from gateway.errors import ServingError, http_status
from gateway.transport.http.http_messages import JSON, HttpResponse

RETRY_AFTER_S = "1"
NOSNIFF = "X-Content-Type-Options"


def error_body(message: str) -> bytes:
    """``{"error": message}`` (any lone surrogate in the message is escaped, never fatal)."""
    return orjson.dumps({"error": message.encode("utf-8", "backslashreplace").decode()})


def error_response(status: int, message: str, **headers: str) -> HttpResponse:
    """``{"error": message}`` with ``status`` and ``headers``."""
    return HttpResponse(status, error_body(message), JSON, {NOSNIFF: "nosniff", **headers})


def failure_response(exc: ServingError, status: int | None = None) -> HttpResponse:
    """The answer to a call that failed with ``exc``; ``status``: the protocol's HTTP status
    for its code (None: :func:`gateway.errors.http_status`'s)."""
    if status is None:
        status = http_status(exc.code)
    headers = {NOSNIFF: "nosniff"}
    if status in (429, 503):
        headers["Retry-After"] = RETRY_AFTER_S
    return HttpResponse(status, error_body(exc.message), JSON, headers, exc.code.name)
