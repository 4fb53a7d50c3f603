"""The gateway's end of one worker's channel: request ids, who awaits each reply, the doorbell.

A worker's :class:`~channel.shm.channel.Channel` carries two kinds of traffic, each sent by its own
link: control requests (load, unload, ping, stop: :class:`~gateway.worker_pool.control.ControlLink`,
what the supervisor does) and runs (:class:`~gateway.worker_channel.run_link.RunLink`, what a front
end does). An :class:`Endpoint` numbers the requests of every link attached to it, posts them on the
channel's submit ring and, when the completion doorbell rings (watched with ``loop.add_reader``),
hands each reply, in completion order, to the link that sent the request. The process that spawns
a worker (the supervisor, or the one process of ``--frontends 1``) holds an endpoint carrying the
control link and a run link (warmup's runs, or every run); each front end of several holds an
endpoint of its own, on its own channel, for its run link (:mod:`gateway.frontend.run_side`).

Every failure path resolves every future: :meth:`Endpoint.close` (the worker died or is retired)
has every attached link fail what it still awaits. A closed endpoint stays closed: it is never
alive again (:meth:`Endpoint.open` refuses), and anything posted on it is refused with the
UNAVAILABLE error it closed with, before the released channel is touched.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Protocol

from channel import messages
from channel.messages import Reply, Request, RunReply
from channel.shm.channel import Channel
from channel.shm.ring import ChannelFull
from gateway.errors import ResourceExhausted, ServingError

log = logging.getLogger(__name__)


class Replies(Protocol):
    """A link's side of an endpoint: it takes the replies to its own requests (on the loop)."""

    def take(self, reply: Reply) -> None:
        """One reply to a request this link posted (or expects, see :meth:`Endpoint.expect`)."""
        ...

    def taken(self) -> None:
        """Every reply ready at one ring of the doorbell has been taken."""
        ...

    def fail_all(self, error: ServingError) -> None:
        """Resolve everything this link awaits with ``error`` (the endpoint is closing)."""
        ...


class Endpoint:
    """The gateway's end of worker ``index``'s ``channel``, watched on ``loop`` until closed."""

    def __init__(self, index: int, channel: Channel, loop: asyncio.AbstractEventLoop) -> None:
        self.index = index
        self.channel = channel
        self._loop = loop
        self._ids = itertools.count(messages.READY_ID + 1)
        self._owners: dict[int, Replies] = {}
        self._links: list[Replies] = []
        self.alive = False
        """True from :meth:`open` (the supervisor saw the worker ready) until :meth:`close`:
        links refuse requests (but ``load``) while it is False. Read once per run: a plain
        attribute, set by those two only."""
        self._closed: ServingError | None = None
        self._bell_due = False
        loop.add_reader(channel.complete_fd, self._on_completions)

    @property
    def closed(self) -> ServingError | None:
        """The error the endpoint closed with (None while open)."""
        return self._closed

    def open(self) -> None:
        """The worker is ready: take requests. Raises the error the endpoint closed with when
        the worker is gone already (its exit was seen first)."""
        self.check_open()
        self.alive = True

    def check_open(self) -> None:
        """Raise (a fresh copy of) the error the endpoint closed with, if it is closed."""
        error = self._closed
        if error is not None:
            raise type(error)(error.message, error.code)

    def attach(self, link: Replies) -> None:
        """Let ``link`` post requests here; it fails what it awaits when the endpoint closes."""
        self._links.append(link)

    def expect(self, request_id: int, link: Replies) -> None:
        """Hand the reply numbered ``request_id`` to ``link`` though nobody posted it (the
        worker's ``ready`` message)."""
        self._owners[request_id] = link

    def next_id(self) -> int:
        """A new request id (unique on this endpoint)."""
        return next(self._ids)

    def post(self, link: Replies, request: Request) -> None:
        """Post ``request`` on the submit ring; its reply will go to ``link``.

        Raises ResourceExhausted when the ring is full, the error the endpoint closed with once
        it is closed (nothing was posted either way).
        """
        self.check_open()
        self.send(link, messages.request_id(request), messages.encode(request))

    def send(self, link: Replies, request_id: int, data: bytes) -> None:
        """Post the encoded request ``data`` (numbered ``request_id``) for a caller that has just
        found the endpoint :attr:`alive` (one check per run); its reply will go to ``link``.
        ResourceExhausted when the ring is full."""
        try:
            self.channel.submit(data, ring=False)
        except ChannelFull as exc:
            raise ResourceExhausted(f"worker {self.index} request ring is full") from exc
        self._owners[request_id] = link
        if not self._bell_due:
            self._bell_due = True
            self._loop.call_soon(self._ring)

    def _ring(self) -> None:
        """The doorbell of everything posted during one loop turn, rung once at its end (if the
        worker sleeps): the worker wakes once for all of it, and not in the middle of the turn
        (on a shared core, a woken worker takes the CPU from the loop at once)."""
        self._bell_due = False
        if self._closed is None:
            self.channel.ring_submit()

    def _on_completions(self) -> None:
        if self._closed is not None:
            return
        took = False
        for data in self.channel.completions():
            try:
                reply = messages.decode_reply(data)
            except ValueError as exc:
                log.error("worker %d: %s", self.index, exc)
                continue
            request_id = reply.id if isinstance(reply, RunReply) else reply["id"]
            link = self._owners.pop(request_id, None)
            if link is None:
                log.warning("worker %d sent a reply for an unknown id: %r", self.index, reply)
                continue
            link.take(reply)
            took = True
        if took:
            for link in self._links:
                link.taken()

    def close(self, error: ServingError) -> None:
        """Stop watching the channel, have every link fail what it awaits with ``error``, release
        the channel. Idempotent."""
        if self._closed is not None:
            return
        self._closed = error
        self.alive = False
        self._loop.remove_reader(self.channel.complete_fd)
        self._owners.clear()
        for link in self._links:
            link.fail_all(error)
        self.channel.close()
