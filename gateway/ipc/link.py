"""One end of a Unix socket between the supervisor and another process, on the event loop.

Frames are :mod:`channel.handover`'s (a JSON object, descriptors as ``SCM_RIGHTS``). A message
has an ``"op"``; a *request* also has an ``"id"``, and its answer is ``{"re": id, "ok": true,
...}`` or ``{"re": id, "ok": false, "code": ..., "message": ...}`` (an error crosses as plain
data, :func:`gateway.errors.from_wire`). Incoming messages go to the ``handler`` in arrival
order: it answers a notification synchronously (returning None) and a request with an awaitable
of the answer's fields, awaited in a task of the link's, so a slow request never holds up the
messages behind it.

Writes never block the loop: what the socket does not take at once is queued and sent when it is
writable. The link owns every descriptor given to :meth:`MessageLink.notify` /
:meth:`~MessageLink.call` (closed once sent, or when the link closes) and every descriptor the
handler receives is the handler's. Every failure path resolves every future: closing the link
(end of stream, a broken frame, :meth:`~MessageLink.close`) fails the calls still waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from channel import handover
from channel.handover import Message
from gateway.errors import Internal, ServingError, Unavailable, from_wire

log = logging.getLogger(__name__)

MessageHandler = Callable[[Message, list[int]], Awaitable[Mapping[str, Any]] | None]
"""Takes one incoming message and its descriptors; for a request, the answer's fields."""


class MessageLink:
    """``sock`` (a connected Unix stream socket, owned from here on) served on the running loop.

    ``handler``: incoming messages (None: none are expected; they are logged and dropped).
    ``on_close``: called once when the link closes, with the reason.
    """

    def __init__(
        self,
        sock: socket.socket,
        handler: MessageHandler | None = None,
        *,
        name: str = "peer",
        on_close: Callable[[ServingError], None] | None = None,
    ) -> None:
        self.name = name
        self._sock = sock
        self._handler = handler
        self._on_close = on_close
        self._loop = asyncio.get_running_loop()
        self._decoder = handover.Decoder()
        self._out: deque[tuple[memoryview, list[int]]] = deque()
        self._ids = itertools.count(1)
        self._calls: dict[int, asyncio.Future[Message]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False
        sock.setblocking(False)
        self._loop.add_reader(sock.fileno(), self._readable)

    # -- sending ----------------------------------------------------------------------------------
    def notify(self, op: str, fds: Sequence[int] = (), **fields: Any) -> None:
        """Send a message that expects no answer (dropped, its descriptors closed, once closed)."""
        self._send({"op": op, **fields}, fds)

    def call(self, op: str, fds: Sequence[int] = (), **fields: Any) -> asyncio.Future[Message]:
        """Send a request; the future resolves with the answer's message or fails with its error
        (Unavailable when the link is or becomes closed: that failure need not be awaited, a
        dropped one is never reported as "Future exception was never retrieved")."""
        future: asyncio.Future[Message] = self._loop.create_future()
        if self.closed:
            handover.close_all(fds)
            future.set_exception(Unavailable(f"the {self.name} is gone"))
            future.exception()  # as close() does: a caller that drops it logs nothing
            return future
        request_id = next(self._ids)
        self._calls[request_id] = future
        self._send({"op": op, "id": request_id, **fields}, fds)
        return future

    def _send(self, message: Mapping[str, Any], fds: Sequence[int]) -> None:
        if self.closed:
            handover.close_all(fds)
            return
        self._out.append((memoryview(handover.frame(message, len(fds))), list(fds)))
        if len(self._out) == 1:
            self._flush()

    def _flush(self) -> None:
        while self._out:
            data, fds = self._out[0]
            try:
                sent = socket.send_fds(self._sock, [data], fds) if fds else self._sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                self.close(Unavailable(f"the {self.name} is gone ({exc.strerror})"))
                return
            if sent and fds:
                handover.close_all(fds)  # they went with the first byte
                fds = []
            if sent < len(data):
                self._out[0] = (data[sent:], fds)
                self._loop.add_writer(self._sock.fileno(), self._writable)
                return
            self._out.popleft()

    def _writable(self) -> None:
        self._loop.remove_writer(self._sock.fileno())
        self._flush()

    # -- receiving --------------------------------------------------------------------------------
    def _readable(self) -> None:
        try:
            more = handover.receive(self._sock, self._decoder)
            frames = list(self._decoder.frames())
        except BlockingIOError:
            return
        except ConnectionResetError:
            self.close(Unavailable(f"the {self.name} is gone"))
            return
        except (OSError, handover.HandoverError) as exc:
            self.close(Unavailable(f"the link to the {self.name} broke: {exc}"))
            return
        for message, fds in frames:
            self._take(message, fds)
        if not more:
            self.close(Unavailable(f"the {self.name} is gone"))

    def _take(self, message: Message, fds: list[int]) -> None:
        answered = message.get("re")
        if isinstance(answered, int):
            handover.close_all(fds)
            future = self._calls.pop(answered, None)
            if future is None or future.done():
                return
            if message.get("ok") is False:
                error = from_wire(str(message.get("code")), str(message.get("message")))
                future.set_exception(error)
            else:
                future.set_result(message)
            return
        if self._handler is None:
            log.warning("unexpected message from the %s: %r", self.name, message.get("op"))
            handover.close_all(fds)
            return
        answer = self._handler(message, fds)
        request_id = message.get("id")
        if answer is not None:
            task = self._loop.create_task(self._answer(request_id, answer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _answer(self, request_id: Any, answer: Awaitable[Mapping[str, Any]]) -> None:
        try:
            fields = await answer
        except ServingError as exc:
            reply: dict[str, Any] = {"ok": False, **exc.to_wire()}
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must still answer, or the caller waits forever
            log.exception("answering a request from the %s failed", self.name)
            reply = {"ok": False, **Internal(f"{type(exc).__name__}: {exc}").to_wire()}
        else:
            reply = {"ok": True, **fields}
        if isinstance(request_id, int):
            self._send({"re": request_id, **reply}, ())

    # -- closing ----------------------------------------------------------------------------------
    def close(self, error: ServingError | None = None) -> None:
        """Stop reading and writing, fail the waiting calls, close the socket; idempotent."""
        if self.closed:
            return
        self.closed = True
        error = error or Unavailable(f"the link to the {self.name} is closed")
        fileno = self._sock.fileno()
        self._loop.remove_reader(fileno)
        self._loop.remove_writer(fileno)
        for _, fds in self._out:
            handover.close_all(fds)
        self._out.clear()
        self._decoder.close()
        calls, self._calls = self._calls, {}
        for future in calls.values():
            if not future.done():
                future.set_exception(error)
                future.exception()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._on_close is not None:
            self._on_close(error)
