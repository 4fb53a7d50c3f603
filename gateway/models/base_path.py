"""A model's base path as TF Serving's file-system source reads it: a path that cannot be listed
publishes nothing.

``FileSystemStoragePathSource`` checks that a servable's base path exists before it lists it, so
that it never "emits an empty aspired-versions list for a non-existent (or transiently
unavailable) base-path" (``PollFileSystemForServable``): the served versions stay. Only a base
path that exists and holds no version directory unloads them. A missing base path is logged at
once with TF Serving's words ("Could not find base path ... for servable ..."), then once a
minute while it lasts, and its end once, so a long outage never floods the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from gateway.models import versions

log = logging.getLogger(__name__)

REPEAT_S = 60.0
"""Seconds between two lines about the same outage."""


class BasePathWatch:
    """Reads the versions under one model's base path; remembers an outage to log it sparingly.
    ``clock``: seconds (``time.monotonic`` by default; tests inject one)."""

    def __init__(self, model: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.model = model
        self._clock = clock
        self._missing_since: float | None = None
        self._next_line_at = 0.0

    @property
    def missing(self) -> bool:
        """Whether the last :meth:`scan` could not list the base path."""
        return self._missing_since is not None

    async def poll(self, base_path: str, serving: int) -> dict[int, str] | None:
        """:meth:`scan` (the manager polls local and object-store base paths alike)."""
        return self.scan(base_path, serving)

    def scan(self, base_path: str, serving: int) -> dict[int, str] | None:
        """The version directories under ``base_path`` by version; None when it cannot be listed
        (nothing may change then). ``serving``: how many versions the model serves (for the log
        line)."""
        try:
            found = versions.versions_on_disk(base_path)
        except OSError as exc:
            self._missing(base_path, exc, serving)
            return None
        if self._missing_since is not None:
            lasted = self._clock() - self._missing_since
            log.info(
                "base path %s of servable %s found again after %.0f s",
                base_path,
                self.model,
                lasted,
            )
            self._missing_since = None
        return found

    def _missing(self, base_path: str, error: OSError, serving: int) -> None:
        now = self._clock()
        if self._missing_since is None:
            self._missing_since = now
        elif now < self._next_line_at:
            return
        self._next_line_at = now + REPEAT_S
        kept = f"its {serving} served version(s) stay" if serving else "it has no version yet"
        reason = error.strerror or str(error)
        lasted = now - self._missing_since
        if lasted == 0:
            what = "Could not find base path %s for servable %s (%s): %s; looked for at every poll"
            log.warning(what, base_path, self.model, reason, kept)
        else:
            what = "Could not find base path %s for servable %s (%s), missing for %.0f s: %s"
            log.warning(what, base_path, self.model, reason, lasted, kept)
