"""Front-end pings over real message links to stand-in front ends (the one fake: a front end is
its link, slot and kill switch, not a process): one that answers is left alone, one that does
not answer within the bound is killed, one whose link closed is left to its exit handling."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from channel.handover import Message
from gateway.ipc.link import MessageLink
from gateway.supervisor.frontend_liveness import front_end_pings
from gateway.tasks import Tasks


@dataclass(eq=False)
class FrontEnd:
    slot: int
    answers: bool
    link: MessageLink = field(init=False)
    peer: MessageLink = field(init=False)
    killed: asyncio.Event = field(default_factory=asyncio.Event)
    pings: int = 0
    pid: int = 0
    alive: bool = True

    def __post_init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.link = MessageLink(ours, name=f"front end {self.slot}")
        self.peer = MessageLink(theirs, self._handle, name="supervisor")

    def _handle(self, message: Message, fds: list[int]) -> Awaitable[dict[str, Any]]:
        self.pings += 1
        return self._answer()

    async def _answer(self) -> dict[str, Any]:
        if not self.answers:
            await asyncio.Event().wait()  # a stopped process: never
        return {}

    def kill(self) -> None:
        self.killed.set()
        self.link.close()
        self.peer.close()


async def test_a_front_end_that_does_not_answer_in_time_is_killed_and_no_other() -> None:
    live, stopped = FrontEnd(0, answers=True), FrontEnd(1, answers=False)
    tasks = Tasks(logging.getLogger(__name__))
    fronts: list[Any] = [live, stopped]
    pings = front_end_pings(lambda: fronts, interval_s=1, timeout_s=0.2, tasks=tasks)
    await pings.ping_all()
    await pings.ping_all()  # one ping at a time each: the stopped one's is outstanding
    await asyncio.wait_for(stopped.killed.wait(), 30)
    assert stopped.pings == 1
    assert live.pings >= 1 and not live.killed.is_set()
    live.kill()
    await pings.ping_all()  # a link that closed: nothing to do, nothing raised
    await tasks.close()
