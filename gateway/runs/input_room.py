"""Waiting for room in a worker's input area, first come first served across the senders.

A sender (a batch queue) whose next run does not fit a worker's input area right now keeps that
run first in line and calls :meth:`InputRoom.wait`; until it calls :meth:`InputRoom.found` (its
run is placed, or left: failed, expired, cancelled), the workers hosting the run's servable are
kept for it: :meth:`InputRoom.kept_before` names them to every sender that came later, which
the dispatcher does not pick for them. So a stream of small runs cannot starve a large one. Each
finished run wakes the waiters, which try again; their members' deadlines bound the wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class InputRoom:
    """The senders waiting for input room, in arrival order, with the servable each sends.

    ``on_capacity``: registers a callback for the next time a run finishes; ``wake``: calls
    every registered callback (the dispatcher's).
    """

    def __init__(
        self, on_capacity: Callable[[Callable[[], None]], None], wake: Callable[[], None]
    ) -> None:
        self._waiting: dict[object, str] = {}
        self._on_capacity = on_capacity
        self._wake = wake

    def wait(self, sender: object, key: str, wake: Callable[[], None]) -> None:
        """``sender``'s next run of ``key`` does not fit an input area now: keep the workers
        hosting ``key`` for it (after those who waited before it) until :meth:`found`, and call
        ``wake`` when a run finishes."""
        self._waiting.setdefault(sender, key)
        self._on_capacity(wake)

    def found(self, sender: object) -> None:
        """``sender`` waits for room no more (its run is placed, or left): the workers it kept
        are free for the others, who look again at the end of this loop turn."""
        if self._waiting.pop(sender, None) is not None:
            asyncio.get_running_loop().call_soon(self._wake)

    def kept_before(self, sender: object) -> set[str]:
        """The servables of the senders waiting ahead of ``sender`` (all of them when ``sender``
        does not wait)."""
        kept: set[str] = set()
        for waiting, key in self._waiting.items():
            if waiting is sender:
                break
            kept.add(key)
        return kept
