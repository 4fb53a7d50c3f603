"""The body of every REST error answer, whatever the protocol: ``{"error": "<message>"}``."""

from __future__ import annotations

import orjson


def error_body(message: str) -> bytes:
    """``{"error": message}`` (any lone surrogate in the message is escaped, never fatal)."""
    return orjson.dumps({"error": message.encode("utf-8", "backslashreplace").decode()})
