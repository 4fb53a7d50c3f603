"""Time for the batch schedulers: monotonic seconds and one-shot timers, injectable.

Deadlines everywhere are ``time.monotonic()`` seconds; tests pass a fake clock that fires timers
when told to, so timeout behaviour is deterministic.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic seconds and one-shot timers (``time.monotonic()`` scale, as deadlines are)."""

    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer: ...


class LoopClock:
    """The real clock: ``time.monotonic()`` and the running loop's timers."""

    now = staticmethod(time.monotonic)
    """``time.monotonic()`` itself (a C function: no Python call per reading)."""

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        delay = max(0.0, when - time.monotonic())
        return asyncio.get_running_loop().call_later(delay, callback)
