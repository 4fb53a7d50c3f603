"""StopBarrier: front ends stopped together answer their last refusals only once all have
begun their shutdown, or exited (the one fake: a front end is its ``alive`` flag)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from gateway.supervisor.stop_barrier import StopBarrier
from tests.support.idle_loop import settle


@dataclass(eq=False)
class FrontEnd:
    alive: bool = True


async def test_each_waits_for_every_other_to_arrive_or_exit() -> None:
    a, b, c = FrontEnd(), FrontEnd(), FrontEnd()
    barrier = StopBarrier()
    barrier.expect([a, b, c])  # type: ignore[list-item]
    first = asyncio.create_task(barrier.arrive(a))  # type: ignore[arg-type]
    await settle()
    assert not first.done()  # b and c still drain
    second = asyncio.create_task(barrier.arrive(b))  # type: ignore[arg-type]
    await settle()
    assert not first.done() and not second.done()
    c.alive = False  # c exited instead
    barrier.check()
    await asyncio.wait_for(asyncio.gather(first, second), 30)


async def test_a_front_end_stopping_alone_waits_for_nobody() -> None:
    await asyncio.wait_for(StopBarrier().arrive(FrontEnd()), 30)  # type: ignore[arg-type]
