"""Log lines that hostile input cannot multiply: one line per interval with a count, no payload.

A client that sends garbage in a loop must not fill the disk. Each kind of event gets a
:class:`Throttled` logger: the first event is logged at once, later ones at most once every
``interval_s`` seconds, each line saying how many events it stands for. Callers pass short
descriptions only, never request bytes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

INTERVAL_S = 60.0


class Throttled:
    """One kind of event, logged at most once per ``interval_s`` (seconds of ``clock``)."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        *,
        level: int = logging.WARNING,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._what = what
        self._level = level
        self._interval_s = interval_s
        self._clock = clock
        self._held = 0
        self._next_at: float | None = None
        self.total = 0
        """Events seen since start."""

    def __call__(self, detail: str) -> None:
        """Count one event; log it (with the count held back since the last line) if due."""
        self.total += 1
        self._held += 1
        now = self._clock()
        if self._next_at is not None and now < self._next_at:
            return
        count, self._held = self._held, 0
        self._next_at = now + self._interval_s
        if count == 1:
            self._logger.log(self._level, "%s: %s", self._what, detail)
        else:
            self._logger.log(
                self._level,
                "%s: %d in the last %.0f s, the latest: %s",
                self._what,
                count,
                self._interval_s,
                detail,
            )
