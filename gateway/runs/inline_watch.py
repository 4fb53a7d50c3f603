"""The wall-clock limit of a run in the front end: a thread that stops it.

A run on the event loop holds the loop until it returns. :class:`InlineWatch` is one daemon
thread per front end that looks, every :data:`POLL_S`, at the run in progress (at most one: the
loop runs one at a time) and sets ONNX Runtime's ``RunOptions.terminate`` on it once it has run
past :data:`~gateway.runs.inline_cost.WALL_LIMIT_S`; ONNX Runtime then ends the run with an
error, and the caller re-runs it on a worker. ONNX Runtime releases the GIL while it computes, so
the thread gets to run. Per run the loop only stores the run's start time and options in
:attr:`InlineWatch.started` and :attr:`InlineWatch.options` (in that order) and clears
``options`` after it (no call); :meth:`InlineWatch.start` runs the thread.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final

from gateway.runs.inline_cost import WALL_LIMIT_S

POLL_S: Final = 0.005
"""How often the thread looks at the run in progress (seconds)."""


class InlineWatch:
    """Stops runs that outlive ``limit_s`` (seconds); :meth:`close` ends the thread."""

    def __init__(self, limit_s: float = WALL_LIMIT_S) -> None:
        self.limit_s = limit_s
        self.options: Any = None
        """The ``RunOptions`` of the run in progress (None: none)."""
        self.started = 0.0
        """When the run in progress started (``time.monotonic()``), set before :attr:`options`."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stopped = 0
        """Runs this watch stopped."""

    def start(self) -> None:
        """Run the thread (once; before the first run it watches)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="inline-watch", daemon=True)
            self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            options = self.options
            if options is not None and time.monotonic() - self.started > self.limit_s:
                options.terminate = True
                self.options = None
                self.stopped += 1

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
