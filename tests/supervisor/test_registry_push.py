"""RegistryPush over real message links to stand-in front ends (the one fake: a front end is
its link and serial, not a process): a loop turn's changes go out as one snapshot, a drain goes
after the pending snapshot and returns once every front end drained, and a front end that is
gone counts as drained."""

from __future__ import annotations

import asyncio
import gc
import socket
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from channel.handover import Message
from gateway.ipc import snapshot
from gateway.ipc.link import MessageLink
from gateway.models.manager import ModelManager
from gateway.supervisor.registry_push import RegistryPush
from tests.support.idle_loop import settle
from tests.support.registries import served


@dataclass
class FrontEnd:
    """A front end as the push sees it (``link``), and its own end of the link: the messages it
    received (``seen``); a drain sets ``asked`` and is answered once ``drained`` is set."""

    serial: int
    link: MessageLink
    peer: MessageLink | None = None
    seen: list[tuple[str, Message]] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    drained: asyncio.Event = field(default_factory=asyncio.Event)

    async def _answer(self, op: str) -> dict[str, Any]:
        if op == "drain":
            self.asked.set()
            await self.drained.wait()
        return {}

    def handle(self, message: Message, fds: list[int]) -> Awaitable[dict[str, Any]]:
        self.seen.append((str(message["op"]), message))
        return self._answer(str(message["op"]))

    def close(self) -> None:
        self.link.close()
        if self.peer is not None:
            self.peer.close()


def front_end(serial: int) -> FrontEnd:
    ours, theirs = socket.socketpair()
    front = FrontEnd(serial, MessageLink(ours, name=f"front end {serial}"))
    front.peer = MessageLink(theirs, front.handle, name="supervisor")
    return front


@asynccontextmanager
async def pushing(tmp_path: Path) -> AsyncIterator[tuple[ModelManager, dict[int, FrontEnd]]]:
    """A model manager serving known states, and two stand-in front ends (serials 1 and 2)."""
    models = await served(tmp_path)
    fronts = {0: front_end(1), 1: front_end(2)}
    try:
        yield models, fronts
    finally:
        for front in fronts.values():
            front.close()


def _ops(front: FrontEnd) -> list[tuple[str, Any]]:
    return [(op, m.get("snapshot", {}).get("serial", m.get("key"))) for op, m in front.seen]


async def test_one_loop_turn_s_changes_go_out_as_one_snapshot(tmp_path: Path) -> None:
    async with pushing(tmp_path) as (models, fronts):
        push = RegistryPush(models, fronts)  # type: ignore[arg-type]
        for _ in range(3):
            push.changed()
        await settle()  # the turn ends: one snapshot
        await push.sync()  # the next one, after everything sent before it
        for front in fronts.values():
            assert _ops(front) == [("snapshot", 1), ("snapshot", 2)]
            assert front.seen[0][1]["snapshot"] == snapshot.snapshot_to_wire(models, 1)


async def test_a_drain_follows_the_pending_snapshot_and_waits_for_every_front_end(
    tmp_path: Path,
) -> None:
    async with pushing(tmp_path) as (models, fronts):
        push = RegistryPush(models, fronts)  # type: ignore[arg-type]
        draining = asyncio.create_task(push.drain(models.resolve("b")))
        push.changed()  # the drain runs first in the next turn: the snapshot is still pending
        fronts[0].drained.set()
        await asyncio.gather(*(f.asked.wait() for f in fronts.values()))
        await settle()
        assert not draining.done()  # front end 2 has not drained yet
        fronts[1].drained.set()
        await draining
        for front in fronts.values():
            assert _ops(front) == [("snapshot", 1), ("drain", "b:4")]


async def test_a_front_end_that_is_gone_counts_as_drained(tmp_path: Path) -> None:
    async with pushing(tmp_path) as (models, fronts):
        push = RegistryPush(models, fronts)  # type: ignore[arg-type]
        fronts[0].drained.set()
        assert fronts[1].peer is not None
        fronts[1].peer.close()  # its process died
        await push.drain(models.resolve("b"))
        assert _ops(fronts[0]) == [("drain", "b:4")]


async def test_a_joining_front_end_gets_the_latest_snapshot_and_a_pending_one_first(
    tmp_path: Path,
) -> None:
    async with pushing(tmp_path) as (models, fronts):
        push = RegistryPush(models, {})
        await push.send(fronts[0])  # type: ignore[arg-type]
        await push.send(fronts[0])  # type: ignore[arg-type]  # unchanged: the same snapshot
        push.changed()
        await push.send(fronts[0])  # type: ignore[arg-type]
        await settle()  # the end of the turn finds nothing left to push
        await push.send(fronts[0])  # type: ignore[arg-type]
        assert _ops(fronts[0]) == [("snapshot", n) for n in (1, 1, 2, 2)]


async def test_a_snapshot_for_a_front_end_that_is_gone_logs_nothing(tmp_path: Path) -> None:
    """SIGTERM during a big reload: front ends exit while the manager's changes are still
    pushed; a snapshot nobody will acknowledge is no "Future exception was never retrieved"."""

    async with pushing(tmp_path) as (models, fronts):
        loop = asyncio.get_running_loop()
        reported: list[str] = []
        loop.set_exception_handler(lambda _, context: reported.append(context["message"]))
        push = RegistryPush(models, fronts)  # type: ignore[arg-type]
        fronts[0].link.close()  # its link broke; its exit is not handled yet
        push.changed()
        await settle()  # the turn ends: the snapshot goes out
        await push.sync()
        gc.collect()
        assert reported == []
        assert _ops(fronts[1]) == [("snapshot", 1), ("snapshot", 2)]
