"""The HTTP layer's bounds on one API call: its body and its deadline, whatever the protocol.

- **Body**: at most ``max_body_bytes`` (``--rest_api_max_body_bytes``): a larger declared
  ``Content-Length``, or a body that grows past it while read, is INVALID_ARGUMENT (400) before any
  of it is parsed (TF Serving sets no limit; 400 like every other malformed request). The whole
  body must arrive within ``body_timeout_s`` (``--rest_api_body_timeout_seconds``; a stalled
  chunked body included), else 408. ``Expect: 100-continue`` is answered before reading.
- **JSON**: at most ``max_json_bytes`` (``--rest_api_max_json_bytes``) of a body are JSON
  (:meth:`CallBounds.check_json`, which each protocol calls before it parses): parsing holds the
  event loop, so this bounds how long one body stalls every other call and probe on its front
  end.
- **Memory**: with a ``budget`` (the front end's ``--max_inflight_bytes``,
  :class:`~gateway.serving.budget.MemoryBudget`), a body counts against it from the moment it
  starts to arrive until its call ends (:meth:`CallBounds.release`): a declared
  ``Content-Length`` is reserved before a byte is read, a chunked body as it grows. Past the
  budget the call is refused at once with RESOURCE_EXHAUSTED (429, ``Retry-After``) and its
  connection closed (:meth:`CallBounds.refused`), so bodies still arriving cannot take the
  process past the budget however many connections send them. The tensors decoded from a body
  count again in the core (a binary tensor is a view on its body: counted twice, a
  conservative bound).
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

from gateway.errors import DeadlineExceeded, InvalidArgument, ResourceExhausted
from gateway.serving.budget import MemoryBudget
from gateway.transport.http.front import HttpError

T = TypeVar("T")

_CONTINUE = "100-continue"
_HELD = web.RequestKey("tensorgate_body_held", int)
"""Bytes of the budget a request's body holds (until :meth:`CallBounds.release`)."""
_REFUSED = web.RequestKey("tensorgate_body_refused", bool)


class CallBounds:
    """The bounds above (milliseconds, bytes, seconds; each >= 1 or > 0)."""

    def __init__(
        self,
        *,
        timeout_ms: int,
        max_body_bytes: int,
        body_timeout_s: float,
        budget: MemoryBudget | None = None,
        max_json_bytes: int | None = None,
    ) -> None:
        if timeout_ms < 1 or max_body_bytes < 1 or body_timeout_s <= 0:
            raise ValueError(
                "timeout_ms and max_body_bytes must be >= 1 and body_timeout_s > 0, got "
                f"{timeout_ms}, {max_body_bytes}, {body_timeout_s}"
            )
        self.timeout_ms = timeout_ms
        self.max_body_bytes = max_body_bytes
        self.max_json_bytes = max_body_bytes if max_json_bytes is None else max_json_bytes
        self.body_timeout_s = body_timeout_s
        self.budget = budget

    async def read_body(self, request: web.BaseRequest) -> bytes:
        """The whole body, refused (400) as soon as it is known to exceed the limit, (429) as
        soon as the in-flight budget cannot hold it, and (408) when it has not arrived within
        the body deadline (a stalled chunked body included)."""
        declared = request.content_length
        if declared is not None and declared > self.max_body_bytes:
            raise self._too_big(f"{declared} bytes")
        if declared:
            self._hold(request, declared)
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
                    if declared is None:
                        self._hold(request, len(chunk))
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

    def release(self, request: web.BaseRequest) -> None:
        """Give back what the request's body held of the budget (its call has ended)."""
        held = request.get(_HELD, 0)
        if held and self.budget is not None:
            request[_HELD] = 0
            self.budget.release(held)

    @staticmethod
    def refused(request: web.BaseRequest) -> bool:
        """Whether the request's body was refused by the budget (its connection must close:
        the rest of the body is unread)."""
        return bool(request.get(_REFUSED, False))

    def _hold(self, request: web.BaseRequest, nbytes: int) -> None:
        if self.budget is None:
            return
        try:
            self.budget.reserve(nbytes)
        except ResourceExhausted as exc:
            request[_REFUSED] = True
            raise ResourceExhausted(f"REST request body: {exc.message}") from None
        request[_HELD] = request.get(_HELD, 0) + nbytes

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

    def check_json(self, nbytes: int) -> None:
        """INVALID_ARGUMENT (400) when a request's JSON is over ``max_json_bytes``
        (``--rest_api_max_json_bytes``): parsing JSON holds the loop, so its size bounds how long
        one body stalls the front end. Called by a protocol before it parses."""
        if nbytes > self.max_json_bytes:
            raise InvalidArgument(
                f"the request's JSON is {nbytes} bytes, over the limit of {self.max_json_bytes} "
                "(--rest_api_max_json_bytes): send large tensors as raw bytes (the V2 binary "
                "tensor extension, or gRPC) or raise the limit"
            )

    def _too_big(self, size: str) -> InvalidArgument:
        return InvalidArgument(
            f"Request body of {size} is over the limit of {self.max_body_bytes} bytes "
            "(--rest_api_max_body_bytes)"
        )
