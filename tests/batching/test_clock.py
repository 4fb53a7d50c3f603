"""The real clock: monotonic seconds, and one-shot timers on the running loop that can be
cancelled (a due time already past fires on the next loop turn)."""

from __future__ import annotations

import time

from gateway.batching.clock import LoopClock
from tests.support.idle_loop import settle


def test_now_is_monotonic_seconds() -> None:
    clock = LoopClock()
    before = time.monotonic()
    now = clock.now()
    assert before <= now <= time.monotonic()


async def test_a_past_due_timer_fires_on_the_next_turn_and_a_cancelled_one_never() -> None:
    clock = LoopClock()
    fired: list[str] = []
    clock.call_at(clock.now() - 10.0, lambda: fired.append("past"))
    cancelled = clock.call_at(clock.now() - 10.0, lambda: fired.append("cancelled"))
    clock.call_at(clock.now() + 3600.0, lambda: fired.append("later"))
    cancelled.cancel()
    assert fired == []  # never synchronously
    await settle()
    assert fired == ["past"]
