"""The control link: what the supervisor asks of one worker (load, unload, ping, stop).

Each request gets a future that resolves with the worker's reply, or fails with the worker's error
(:func:`gateway.errors.from_wire`) or, when the worker dies or is retired, with the error its
endpoint closes with. The worker's first message, ``ready``, resolves :attr:`ControlLink.ready`.
Runs never go over this link: they are the run link's (:mod:`gateway.worker_channel.run_link`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from channel import messages
from channel.messages import LoadReply, OkReply, PingReply, Ready, Reply, Request, RunReply
from channel.shm.channel import Channel
from gateway.errors import ServingError, Unavailable, from_wire
from gateway.worker_channel.endpoint import Endpoint


class ControlLink:
    """The supervisor's requests to the worker at the other end of ``endpoint``."""

    def __init__(self, endpoint: Endpoint, loop: asyncio.AbstractEventLoop) -> None:
        self.endpoint = endpoint
        self.pid: int | None = None
        """The worker process's id (set by the pool once spawned)."""
        self._loop = loop
        self._calls: dict[int, asyncio.Future[Any]] = {}
        self.ready: asyncio.Future[Ready] = loop.create_future()
        """Resolves when the worker posts its ``ready`` message (it then accepts requests)."""
        self._calls[messages.READY_ID] = self.ready
        endpoint.attach(self)
        endpoint.expect(messages.READY_ID, self)

    @property
    def index(self) -> int:
        return self.endpoint.index

    @property
    def alive(self) -> bool:
        return self.endpoint.alive

    @property
    def channel(self) -> Channel:
        """The channel under the link (its areas' usage is reported as a metric)."""
        return self.endpoint.channel

    # -- requests ---------------------------------------------------------------------------
    def load(
        self,
        *,
        key: str,
        path: str,
        platform: str,
        intra_op: int,
        inter_op: int,
        tags: Sequence[str],
        runtime: str = "",
        precision: str = "",
    ) -> asyncio.Future[LoadReply]:
        """Load a servable (allowed before the worker counts as alive); the reply carries its
        signature."""
        request = messages.load_request(
            self.endpoint.next_id(),
            key=key,
            path=path,
            platform=platform,
            intra_op=intra_op,
            inter_op=inter_op,
            tags=tags,
            runtime=runtime,
            precision=precision,
        )
        return self._call(request, before_alive=True)

    def unload(self, key: str) -> asyncio.Future[OkReply]:
        return self._call(messages.unload_request(self.endpoint.next_id(), key=key))

    def ping(self, key: str | None = None) -> asyncio.Future[PingReply]:
        """Liveness; with ``key``, the reply's ``runs`` counts that key's runs in the worker."""
        return self._call(messages.ping_request(self.endpoint.next_id(), key=key))

    def stop(self) -> asyncio.Future[OkReply]:
        """Ask the worker to reply and exit 0; later requests are answered UNAVAILABLE."""
        return self._call(messages.stop_request(self.endpoint.next_id()))

    def _call(self, request: Request, *, before_alive: bool = False) -> asyncio.Future[Any]:
        self.endpoint.check_open()  # gone: the reason it closed with
        if not self.endpoint.alive and not before_alive:
            raise Unavailable(f"worker {self.endpoint.index} is not available")
        future: asyncio.Future[Any] = self._loop.create_future()
        self.endpoint.post(self, request)
        self._calls[messages.request_id(request)] = future
        return future

    # -- replies (the endpoint's :class:`~gateway.worker_channel.endpoint.Replies`) ----------------
    def take(self, reply: Reply) -> None:
        future = self._calls.pop(messages.reply_id(reply), None)
        if future is None or future.done():
            return
        if not isinstance(reply, RunReply) and reply["ok"] is False:
            future.set_exception(from_wire(reply["code"], reply["message"]))
        else:
            future.set_result(reply)

    def taken(self) -> None:
        pass

    def fail_all(self, error: ServingError) -> None:
        calls, self._calls = self._calls, {}
        for future in calls.values():
            if not future.done():
                future.set_exception(error)
                future.exception()  # nobody may await it (a ping): mark it retrieved
