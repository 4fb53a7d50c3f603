"""Fanout passes worker events on to the joined front ends, over real message links and a real
load table (the one fake: the processes — a worker or a front end is a stand-in holding its end
of a socket pair, whose other end records what arrives)."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from channel.handover import Message, close_all
from gateway.errors import ServingError
from gateway.ipc.link import MessageLink
from gateway.runs.shared_load import LoadTable
from gateway.supervisor.fanout import Fanout, channel_fds


@dataclass
class Peer:
    """The far end of a link: what arrived (op, fields, how many descriptors); ``arrived`` is set
    on each message."""

    link: MessageLink | None = None
    seen: list[tuple[str, dict[str, Any], int]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def handle(self, message: Message, fds: list[int]) -> None:
        fields = {k: v for k, v in message.items() if k != "op"}
        self.seen.append((str(message["op"]), fields, len(fds)))
        close_all(fds)
        self.arrived.set()

    async def next(self) -> tuple[str, dict[str, Any], int]:
        """The next message (each is taken once)."""
        while not self.seen:
            self.arrived.clear()
            await self.arrived.wait()
        return self.seen.pop(0)


def _pair(name: str) -> tuple[socket.socket, Peer]:
    ours, theirs = socket.socketpair()
    peer = Peer()
    peer.link = MessageLink(theirs, peer.handle, name=name)
    return ours, peer


@dataclass
class Worker:
    """A worker process as the pool hands it over."""

    index: int
    pid: int
    handover: socket.socket | None
    routed: set[str] = field(default_factory=set)
    alive: bool = True
    retired: list[ServingError] = field(default_factory=list)

    def retire(self, error: ServingError) -> None:
        self.retired.append(error)


@dataclass
class FrontEnd:
    slot: int
    serial: int
    link: MessageLink


@pytest.fixture
def table() -> Iterator[LoadTable]:
    memfd = LoadTable.create_memfd(2, 2)
    table = LoadTable(memfd, 2, 2)
    yield table
    table.close()
    os.close(memfd)


WorkerMaker = Callable[[int, int, set[str]], tuple[Any, Peer]]  # a fake WorkerProcess
"""(index, pid, routed) → a stand-in worker and the test's end of its socket."""
FrontEndMaker = Callable[[int, int], tuple[Any, Peer]]  # a fake FrontEndProcess
"""(slot, serial) → a stand-in front end and the test's end of its socket."""


@asynccontextmanager
async def fanning(table: LoadTable) -> AsyncIterator[tuple[Fanout, WorkerMaker, FrontEndMaker]]:
    """A fanout over ``table``, and makers of stand-in workers and front ends (all closed at
    the end)."""
    fanout = Fanout(input_bytes=4096, output_bytes=4096, table=table)
    peers: list[Peer] = []

    def worker(index: int, pid: int, routed: set[str]) -> tuple[Worker, Peer]:
        sock, peer = _pair(f"worker {index}")
        peers.append(peer)
        return Worker(index, pid, sock, routed), peer

    def front_end(slot: int, serial: int) -> tuple[FrontEnd, Peer]:
        sock, peer = _pair(f"front end {slot}")
        peers.append(peer)
        return FrontEnd(slot, serial, MessageLink(sock, name="supervisor")), peer

    try:
        yield fanout, worker, front_end
    finally:
        for front in fanout.front_ends.values():
            front.link.close()
        fanout.close()
        for peer in peers:
            assert peer.link is not None
            peer.link.close()


def test_channel_fds_are_a_memfd_and_three_eventfds() -> None:
    fds = channel_fds(0, 4096, 4096)
    try:
        assert len(fds) == 4
        assert os.readlink(f"/proc/self/fd/{fds[0]}").startswith("/memfd:tensorgate-w0")
        assert all("eventfd" in os.readlink(f"/proc/self/fd/{fd}") for fd in fds[1:])
    finally:
        close_all(fds)


async def test_each_front_end_worker_pair_gets_a_channel_both_ways(table: LoadTable) -> None:
    async with fanning(table) as (fanout, worker, front_end):
        first, first_side = front_end(0, 11)
        fanout.join(first)
        up, up_side = worker(0, 100, {"m:2", "m:1"})
        fanout.started(up)  # a worker up: a channel for the joined front end
        assert up.handover is None  # the fanout owns the socket now
        assert await up_side.next() == ("attach", {"owner": 11}, 4)
        routed = {"index": 0, "pid": 100, "routed": ["m:1", "m:2"]}
        assert await first_side.next() == ("worker", routed, 4)
        second, second_side = front_end(1, 12)
        fanout.join(second)  # a front end joins: a channel to every live worker
        assert await up_side.next() == ("attach", {"owner": 12}, 4)
        assert await second_side.next() == ("worker", routed, 4)


async def test_routes_and_deaths_reach_every_joined_front_end(table: LoadTable) -> None:
    async with fanning(table) as (fanout, worker, front_end):
        front, side = front_end(0, 11)
        fanout.join(front)
        fanout.route(1, "m:1")
        fanout.unroute(1, "m:1")
        gone, _ = worker(1, 101, set())
        fanout.exited(gone, -9)
        assert [await side.next() for _ in range(3)] == [
            ("route", {"index": 1, "key": "m:1"}, 0),
            ("unroute", {"index": 1, "key": "m:1"}, 0),
            ("worker_gone", {"index": 1, "pid": 101, "message": "worker 1 exited (code -9)"}, 0),
        ]
        assert gone.handover is None  # a worker that never became ready: its socket closed


async def test_a_retired_worker_is_killed_once_and_its_death_gives_the_reason(
    table: LoadTable,
) -> None:
    async with fanning(table) as (fanout, worker, front_end):
        front, side = front_end(0, 11)
        fanout.join(front)
        hung, _ = worker(0, 100, set())
        fanout.started(hung)
        await side.next()  # its channel
        fanout.retire(0, 99, "stale pid")  # another process by now: nothing
        fanout.retire(0, 100, "worker 0 hung in m:1")
        assert [e.message for e in hung.retired] == ["worker 0 hung in m:1"]
        hung.alive = False
        fanout.retire(0, 100, "again")  # not alive: nothing more
        fanout.exited(hung, -9)
        assert await side.next() == (
            "worker_gone",
            {"index": 0, "pid": 100, "message": "worker 0 hung in m:1"},
            0,
        )
        assert len(hung.retired) == 1


async def test_a_front_end_that_leaves_is_detached_and_its_load_zeroed(table: LoadTable) -> None:
    async with fanning(table) as (fanout, worker, front_end):
        front, _ = front_end(1, 12)
        fanout.join(front)
        up, up_side = worker(0, 100, set())
        fanout.started(up)
        assert await up_side.next() == ("attach", {"owner": 12}, 4)
        table.set(1, 0, 3)
        table.set(0, 0, 2)
        fanout.leave(front)
        assert await up_side.next() == ("detach", {"owner": 12}, 0)
        assert fanout.front_ends == {} and table.load(0) == 2
        front.link.close()
