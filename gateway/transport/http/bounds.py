"""The HTTP layer's bounds on one API call: its body and its deadline, whatever the protocol.

- **Body**: at most ``max_body_bytes`` (``--rest_api_max_body_bytes``): a larger declared
  ``Content-Length``, or a body that grows past it while read, is INVALID_ARGUMENT (400) before any
  of it is parsed (TF Serving sets no limit; 400 like every other malformed request). The whole
  body must arrive within ``body_timeout_s`` (``--rest_api_body_timeout_seconds``; a stalled
  chunked body included), else 408. ``Expect: 100-continue`` is answered before reading.
- **Deadline**: ``time.monotonic() + timeout_ms / 1000`` (``--rest_api_timeout_in_ms``) from when
  the body has been read (:meth:`CallBounds.deadline`); :meth:`CallBounds.until` cancels what it
  awaits when the deadline passes, with DEADLINE_EXCEEDED (504).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

from aiohttp import web

from gateway.errors import DeadlineExceeded, InvalidArgument
from gateway.transport.http.front import HttpError

T = TypeVar("T")

_CONTINUE = "100-continue"


class CallBounds:
    """The bounds above (milliseconds, bytes, seconds; each >= 1 or > 0)."""

    def __init__(self, *, timeout_ms: int, max_body_bytes: int, body_timeout_s: float) -> None:
        if timeout_ms < 1 or max_body_bytes < 1 or body_timeout_s <= 0:
            raise ValueError(
                "timeout_ms and max_body_bytes must be >= 1 and body_timeout_s > 0, got "
                f"{timeout_ms}, {max_body_bytes}, {body_timeout_s}"
            )
        self.timeout_ms = timeout_ms
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def read_body(self, request: web.BaseRequest) -> bytes:
        """The whole body, refused (400) as soon as it is known to exceed the limit, and (408)
        when it has not arrived within the body deadline (a stalled chunked body included)."""
        declared = request.content_length
        if declared is not None and declared > self.max_body_bytes:
            raise self._too_big(f"{declared} bytes")
        if request.version >= (1, 1) and request.headers.get("Expect", "").lower() == _CONTINUE:
            # The client (curl, for large bodies) waits for this before sending the body.
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.writer.output_size = 0
        chunks, size = [], 0
        timeout = asyncio.timeout(self.body_timeout_s)
        try:
            async with timeout:
                async for chunk in request.content.iter_any():
                    size += len(chunk)
                    if size > self.max_body_bytes:
                        raise self._too_big(f"more than {self.max_body_bytes} bytes")
                    chunks.append(chunk)
        except TimeoutError:
            if not timeout.expired():
                raise
            raise HttpError(
                408,
                f"the request body was not received within {self.body_timeout_s:g} s "
                "(--rest_api_body_timeout_seconds)",
            ) from None
        return b"".join(chunks)

    def deadline(self) -> float:
        """The deadline of a call whose body has just been read (``time.monotonic()`` seconds)."""
        return time.monotonic() + self.timeout_ms / 1000

    async def until(self, deadline: float, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``, cancelled with DEADLINE_EXCEEDED when ``deadline`` passes."""
        timeout = asyncio.timeout(max(deadline - time.monotonic(), 0.0))
        try:
            async with timeout:
                return await awaitable
        except TimeoutError:
            if not timeout.expired():
                raise
            raise DeadlineExceeded(
                f"Deadline exceeded: the call took longer than {self.timeout_ms} ms "
                "(--rest_api_timeout_in_ms)"
            ) from None

    def _too_big(self, size: str) -> InvalidArgument:
        return InvalidArgument(
            f"Request body of {size} is over the limit of {self.max_body_bytes} bytes "
            "(--rest_api_max_body_bytes)"
        )
