"""Two message links over a real socket pair, on one loop: requests, answers, errors,
notifications, descriptors, large messages and closing."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Mapping
from typing import Any

import pytest

from channel.handover import Message
from gateway.errors import NotFound, ServingError, Unavailable
from gateway.ipc.link import MessageLink


class Peer:
    """A handler that records notifications and answers requests by op."""

    def __init__(self) -> None:
        self.notes: list[tuple[Message, list[int]]] = []
        self.release = asyncio.Event()

    def __call__(self, message: Message, fds: list[int]) -> Awaitable[Mapping[str, Any]] | None:
        if "id" not in message:
            self.notes.append((message, fds))
            return None
        return self.answer(message)

    async def answer(self, message: Message) -> Mapping[str, Any]:
        if message["op"] == "echo":
            return {"echo": message["value"]}
        if message["op"] == "slow":
            await self.release.wait()
            return {"slow": True}
        if message["op"] == "missing":
            raise NotFound("no such thing")
        raise RuntimeError("a bug")


def _links(peer: Peer) -> tuple[MessageLink, MessageLink, list[ServingError]]:
    a, b = socket.socketpair()
    closed: list[ServingError] = []
    return MessageLink(a, name="a"), MessageLink(b, peer, name="b", on_close=closed.append), closed


async def test_requests_are_answered_in_any_order_and_errors_keep_their_code() -> None:
    peer = Peer()
    caller, answerer, _ = _links(peer)
    slow = caller.call("slow")
    fast = caller.call("echo", value=[1, "two"])
    assert (await fast)["echo"] == [1, "two"]  # a slow request holds up nothing
    assert not slow.done()
    peer.release.set()
    assert (await slow)["slow"] is True
    with pytest.raises(NotFound, match="no such thing"):
        await caller.call("missing")
    with pytest.raises(ServingError, match="RuntimeError: a bug") as info:
        await caller.call("broken")
    assert info.value.code.name == "INTERNAL"
    caller.close()
    answerer.close()


async def test_notifications_carry_descriptors_and_large_bodies() -> None:
    peer = Peer()
    caller, answerer, _ = _links(peer)
    r, w = os.pipe()
    caller.notify("fd", fds=[r], tag="pipe")  # the link owns r from here on
    text = "x" * (4 << 20)  # more than a socket buffer: written as the peer reads
    caller.notify("big", text=text)
    answer = await caller.call("echo", value=1)  # answered after both notifications
    assert answer["echo"] == 1
    (note, fds), (big, none) = peer.notes
    assert note == {"op": "fd", "tag": "pipe"} and big["text"] == text and none == []
    os.write(w, b"!")
    assert os.read(fds[0], 1) == b"!"
    os.close(fds[0])
    os.close(w)
    caller.close()
    answerer.close()


async def test_closing_either_end_fails_what_waits_and_refuses_new_calls() -> None:
    peer = Peer()
    caller, answerer, closed = _links(peer)
    waiting = caller.call("slow")
    await asyncio.sleep(0)
    answerer.close()  # the peer goes away
    with pytest.raises(Unavailable, match="is gone"):
        await waiting
    assert caller.closed and len(closed) == 1
    with pytest.raises(Unavailable):
        await caller.call("echo", value=2)
    r, w = os.pipe()
    caller.notify("fd", fds=[r])  # dropped, its descriptor closed
    with pytest.raises(OSError):
        os.fstat(r)
    os.close(w)
