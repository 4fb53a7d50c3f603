"""The JSON error answers of every REST API, whatever the protocol: ``{"error": "<message>"}``
with the failure's HTTP status (TF Serving's, :func:`gateway.errors.http_status`, unless the
protocol maps codes its own way), ``Retry-After`` on the retryable ones (429, 503), and the
canonical code name under :data:`STATUS_KEY` for observability."""

from __future__ import annotations

import orjson
from aiohttp import web

from gateway.errors import ServingError, http_status

JSON = "application/json"
RETRY_AFTER_S = "1"
STATUS_KEY = web.ResponseKey("tensorgate_status", str)
"""Set on error responses: the canonical code name (``"NOT_FOUND"``, ...) of the failure."""


def error_body(message: str) -> bytes:
    """``{"error": message}`` (any lone surrogate in the message is escaped, never fatal)."""
    return orjson.dumps({"error": message.encode("utf-8", "backslashreplace").decode()})


def failure_response(exc: ServingError, status: int | None = None) -> web.Response:
    """The answer to a call that failed with ``exc``; ``status``: the protocol's HTTP status
    for its code (None: :func:`gateway.errors.http_status`'s)."""
    if status is None:
        status = http_status(exc.code)
    response = web.Response(status=status, body=error_body(exc.message), content_type=JSON)
    response[STATUS_KEY] = exc.code.name
    if status in (429, 503):
        response.headers["Retry-After"] = RETRY_AFTER_S
    return response
