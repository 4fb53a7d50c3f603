"""A front-end process as the supervisor holds it, spawned for real: its arguments reach
``python -m gateway.frontend`` (a flag mistake there ends it with status 2), and its exit is
noticed on the loop — ``exited`` resolves with the code, its link closes, ``on_exit`` runs — with
``stop`` and ``kill`` harmless once it has ended. Serving front ends:
tests/e2e/test_frontends.py."""

from __future__ import annotations

import asyncio
import os

from gateway.ipc.link import MessageHandler
from gateway.runs.shared_load import LoadTable
from gateway.supervisor.frontends import FrontEndProcess

WAIT_S = 60.0
"""Bound of every wait (never reached when things work)."""


async def test_a_front_end_that_ends_is_noticed_with_its_code() -> None:
    ended: list[FrontEndProcess] = []
    handled: list[FrontEndProcess] = []

    def handler(front: FrontEndProcess) -> MessageHandler:
        handled.append(front)
        return lambda message, fds: None

    memfd = LoadTable.create_memfd(1, 1)
    try:
        front = FrontEndProcess.spawn(
            0,
            7,
            flags=["--no_such_flag=1"],
            load_table_fd=memfd,
            frontends=1,
            workers=1,
            handler=handler,
            on_exit=ended.append,
        )
    finally:
        os.close(memfd)
    assert handled == [front] and (front.slot, front.serial) == (0, 7)
    assert await asyncio.wait_for(front.exited, WAIT_S) == 2
    assert ended == [front] and not front.alive and front.link.closed
    front.kill()  # reaped: nothing
    assert await front.stop(WAIT_S) == 2
