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
  connection closed (the request's ``refused``), so bodies still arriving cannot take the
  process past the budget however many connections send them. The tensors decoded from a body
  count again in the core (a binary tensor is a view on its body: counted twice, a
  conservative bound).
- **Deadline**: ``time.monotonic() + timeout_ms / 1000`` (``--rest_api_timeout_in_ms``) from when
  the body has been read (:meth:`CallBounds.deadline`); :meth:`CallBounds.until` cancels what it
  awaits when the deadline passes, with DEADLINE_EXCEEDED (504).

The body itself arrives on the connection (:mod:`~gateway.transport.http.connection`) whatever
the handler does: bytes past the limit are dropped there, and a body read here is usually whole
already (one read brought the request), so reading it is a join, or nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

from gateway.errors import DeadlineExceeded, InvalidArgument, ResourceExhausted
from gateway.serving.budget import MemoryBudget
from gateway.transport.http.front import HttpError
from gateway.transport.http.http_messages import HttpRequest

T = TypeVar("T")

_CONTINUE = "100-continue"


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

    async def read_body(self, request: HttpRequest) -> bytes:
        """The whole body, refused (400) as soon as it is known to exceed the limit, (429) as
        soon as the in-flight budget cannot hold it, and (408) when it has not arrived within
        the body deadline (a stalled chunked body included)."""
        declared = request.content_length
        if request.over_limit or (declared is not None and declared > self.max_body_bytes):
            raise self._too_big(request)
        if declared:
            self._hold(request, declared)
        if not request.complete:
            await self._rest_of(request, declared is None)
        elif declared is None and request.size:
            self._hold(request, request.size)
        chunks = request.chunks
        return chunks[0] if len(chunks) == 1 else request.body()

    async def _rest_of(self, request: HttpRequest, chunked: bool) -> None:
        """Wait for the end of ``request``'s body (holding a chunked one's bytes as they come)."""
        if request.headers.get("expect", "").lower() == _CONTINUE and request.version == "1.1":
            request.send_continue()  # the client (curl, for large bodies) waits for it
        timeout = asyncio.timeout(self.body_timeout_s)
        try:
            async with timeout:
                while True:
                    if chunked and request.size > request.held:
                        self._hold(request, request.size - request.held)
                    if request.over_limit:
                        raise self._too_big(request)
                    if request.broken is not None:
                        raise InvalidArgument(f"malformed HTTP request body: {request.broken}")
                    if request.complete:
                        return
                    await request.more()
        except TimeoutError:
            if not timeout.expired():
                raise
            raise HttpError(
                408,
                f"the request body was not received within {self.body_timeout_s:g} s "
                "(--rest_api_body_timeout_seconds)",
                close=True,
            ) from None

    def release(self, request: HttpRequest) -> None:
        """Give back what the request's body held of the budget (its call has ended)."""
        held = request.held
        if held and self.budget is not None:
            request.held = 0
            self.budget.release(held)

    def _hold(self, request: HttpRequest, nbytes: int) -> None:
        if self.budget is None:
            request.held += nbytes  # counted for chunked bodies, nothing reserved
            return
        try:
            self.budget.reserve(nbytes)
        except ResourceExhausted as exc:
            request.refused = True
            raise ResourceExhausted(f"REST request body: {exc.message}") from None
        request.held += nbytes

    def deadline(self) -> float:
        """The deadline of a call whose body has just been read (``time.monotonic()`` seconds)."""
        return time.monotonic() + self.timeout_ms / 1000

    async def until(self, deadline: float, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``, cancelled with DEADLINE_EXCEEDED when ``deadline`` passes (one
        timer, no context manager: this is on every call's path)."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("CallBounds.until runs in a task")
        expired = [False]

        def expire() -> None:
            expired[0] = True
            task.cancel()

        timer = asyncio.get_running_loop().call_later(max(deadline - time.monotonic(), 0.0), expire)
        try:
            return await awaitable
        except asyncio.CancelledError:
            if expired[0] and task.uncancel() == 0:
                raise DeadlineExceeded(
                    f"Deadline exceeded: the call took longer than {self.timeout_ms} ms "
                    "(--rest_api_timeout_in_ms)"
                ) from None
            raise
        finally:
            timer.cancel()

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

    def _too_big(self, request: HttpRequest) -> InvalidArgument:
        declared = request.content_length
        if request.declared_chunk is not None:
            return InvalidArgument(
                f"Request body of more than {self.max_body_bytes} bytes is over the limit (a "
                f"chunk declares {request.declared_chunk} bytes; --rest_api_max_body_bytes)"
            )
        size = f"{declared} bytes" if declared is not None else f"more than {self.max_body_bytes}"
        if declared is None:
            size += " bytes"
        return InvalidArgument(
            f"Request body of {size} is over the limit of {self.max_body_bytes} bytes "
            "(--rest_api_max_body_bytes)"
        )
