"""Waiting for input room: the workers of a waiting sender's servable are kept for it against
every sender that came later; when it stops waiting, the others are woken at the end of the turn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from gateway.runs.input_room import InputRoom
from tests.support.idle_loop import settle


async def test_senders_are_kept_in_arrival_order_and_woken_once_one_finds_room() -> None:
    registered: list[Callable[[], None]] = []
    woken: list[str] = []
    room = InputRoom(registered.append, lambda: woken.append("wake"))
    first, second, stranger = object(), object(), object()
    room.wait(first, "big:1", lambda: None)
    room.wait(second, "small:1", lambda: None)
    room.wait(first, "big:1", lambda: None)  # waiting again keeps its place
    assert len(registered) == 3
    assert room.kept_before(first) == set()
    assert room.kept_before(second) == {"big:1"}
    assert room.kept_before(stranger) == {"big:1", "small:1"}
    room.found(stranger)  # not waiting: nothing to free
    await settle()
    assert woken == []
    room.found(first)
    assert woken == []  # at the end of this loop turn
    await asyncio.sleep(0)
    assert woken == ["wake"]
    assert room.kept_before(second) == set()
    assert room.kept_before(stranger) == {"small:1"}
