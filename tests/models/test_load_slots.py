"""LoadSlots: at most ``limit`` holders, admitted in arrival order; a stop event ends a wait
without a slot; a raised limit admits waiters at once. Every "still waiting" is checked after
the loop has run all it can (``settle``)."""

from __future__ import annotations

import asyncio

from gateway.models.load_slots import LoadSlots
from tests.support.idle_loop import settle


async def test_a_limit_below_one_is_one_and_free_slots_are_taken_at_once() -> None:
    slots = LoadSlots(0)
    assert slots.limit == 1
    assert await slots.take(asyncio.Event())
    assert slots.busy == 1
    slots.release()
    assert slots.busy == 0


async def test_waiters_are_admitted_one_release_at_a_time_in_arrival_order() -> None:
    slots, never = LoadSlots(1), asyncio.Event()
    assert await slots.take(never)
    admitted: list[str] = []

    async def wait(name: str) -> None:
        assert await slots.take(never)
        admitted.append(name)

    waiters = [asyncio.create_task(wait(n)) for n in ("first", "second")]
    await settle()
    assert admitted == [] and slots.busy == 1
    slots.release()
    await settle()
    assert admitted == ["first"] and slots.busy == 1
    slots.release()
    await asyncio.gather(*waiters)
    assert admitted == ["first", "second"]


async def test_a_stop_ends_the_wait_without_a_slot_and_leaves_the_queue() -> None:
    slots, stop = LoadSlots(1), asyncio.Event()
    assert await slots.take(asyncio.Event())
    waiter = asyncio.create_task(slots.take(stop))
    await settle()
    stop.set()
    assert await waiter is False
    assert await slots.take(stop) is False  # already stopped: no wait at all
    slots.release()
    assert slots.busy == 0  # the stopped waiter was not admitted


async def test_raising_the_limit_admits_waiters_and_lowering_it_keeps_holders() -> None:
    slots, never = LoadSlots(1), asyncio.Event()
    assert await slots.take(never)
    waiter = asyncio.create_task(slots.take(never))
    await settle()
    slots.limit = 2
    await settle()
    assert waiter.done() and waiter.result() and slots.busy == 2
    slots.limit = 1
    assert slots.busy == 2
    slots.release()
    late = asyncio.create_task(slots.take(never))
    await settle()
    assert not late.done()  # one holder is still at the limit
    slots.release()
    await settle()
    assert late.done() and late.result()


async def test_a_waiter_cancelled_as_it_is_admitted_passes_the_slot_on() -> None:
    slots, never = LoadSlots(1), asyncio.Event()
    assert await slots.take(never)
    cancelled = asyncio.create_task(slots.take(never))
    following = asyncio.create_task(slots.take(never))
    await settle()
    slots.release()  # admits ``cancelled``: its turn is done before it runs again
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    await settle()
    assert following.done() and following.result()
    assert slots.busy == 1
