"""Where a batch runs, as the batcher sees it: one interface, whatever is at the other end.

A batch scheduler (:mod:`gateway.batching.scheduler`) asks the dispatcher for a runner with a
free slot (:meth:`~gateway.runs.dispatcher.Dispatcher.pick`), asks it whether the batch fits
now (:meth:`BatchRunner.check_room`) and submits it (:meth:`BatchRunner.submit`); that is all
the batcher knows of where its batches run. The dispatcher hands out workers' run links
(:class:`~gateway.worker_channel.run_link.RunLink`: the batch's rows written straight into the
worker's shared-memory input area); the unit tests' seam hands out fake links
(``tests/support/fakes.py``). Which worker, its index, whether it is alive and its runs in
flight are the dispatcher's to know, not the batcher's.

The versions a front end runs itself take a short path of their own, before any batch queue
(:mod:`gateway.serving.inline_path`): their calls never reach a batch runner, and nothing poses
as a worker for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from gateway.worker_channel.lease import RunResult
from gateway.worker_channel.run_link import Fill, Layout


class BatchRunner(Protocol):
    """Runs one batch at a time per call; several may be in flight."""

    def check_room(self, layout: Layout) -> None:
        """Raise what :meth:`submit` would for a batch of ``layout`` that cannot be placed now
        (InputAreaFull: the sender may wait for room) or ever (InputTooLarge), before anything
        is written or observed."""
        ...

    def submit(
        self,
        key: str,
        layout: Layout,
        fill: Fill,
        outputs: Sequence[str] | None,
        deadline: float | None,
        signature: str = "",
        trace: tuple[int, int] | None = None,
    ) -> asyncio.Future[RunResult]:
        """Place the batch of servable ``key`` (``layout``: each input's dtype and shape;
        ``fill(name, dest)`` writes input ``name`` into ``dest``) and run it: a future of its
        ``outputs`` (None: all) under a lease. ``deadline``: ``time.monotonic()`` seconds, for
        the runner to drop a run nobody waits for; ``trace``: the batch span's (trace id, span
        id). Raises InputAreaFull / InputTooLarge as :meth:`check_room`, Unavailable when the
        runner is gone; the future fails with the run's error."""
        ...
