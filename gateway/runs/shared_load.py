"""Least-loaded routing across front-end processes: every front end sees every worker's load.

With several front ends each routes its own runs, over channels of its own, to workers they all
share. The :class:`LoadTable` is one small anonymous memfd (no name in /dev/shm) that the supervisor
makes and every front end maps: a uint64 per (front end, worker) holding that front end's runs in
flight on that worker. Each slot has one writer, its front end (aligned 8-byte stores: readers see
a whole value, never a torn one), so no cross-process atomics are needed; a reader sums a
worker's column. A respawned front end zeroes its row first (its runs died with the process).

:class:`SharedLoadDispatcher` is the front end's :class:`~gateway.runs.dispatcher.Dispatcher`
over that table: its run links publish their runs in flight as they change (each link is given
its slot's writer), and ``pick`` chooses
the live worker hosting the servable with the fewest runs in flight over all front ends (ties:
fewer of this front end's own), within this front end's own cap of ``max_in_flight``. The cap
stays per front end because a front end is woken only by its own runs' completions.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import mmap
import os
from collections.abc import Callable

from gateway.runs.dispatcher import Dispatcher
from gateway.worker_channel.endpoint import Endpoint
from gateway.worker_channel.run_link import RunLink

SLOT_BYTES = 8


class LoadTable:
    """``frontends`` × ``workers`` counters in ``memfd`` (mapped here; the descriptor stays the
    caller's)."""

    def __init__(self, memfd: int, frontends: int, workers: int) -> None:
        if frontends < 1 or workers < 1:
            raise ValueError(f"a load table needs >= 1 row and column, got {frontends}x{workers}")
        size = os.fstat(memfd).st_size
        if size < frontends * workers * SLOT_BYTES:
            raise ValueError(f"load table memfd of {size} bytes is too small")
        self.frontends = frontends
        self.workers = workers
        self._slots = frontends * workers
        self._mmap = mmap.mmap(memfd, size, flags=mmap.MAP_SHARED)
        self._words = memoryview(self._mmap).cast("Q")

    @staticmethod
    def create_memfd(frontends: int, workers: int) -> int:
        """A zeroed, sealed memfd for such a table; the caller owns the descriptor."""
        memfd = os.memfd_create("tensorgate-load", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(memfd, max(1, frontends * workers) * SLOT_BYTES)
            seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
            fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, seals)
        except BaseException:
            os.close(memfd)
            raise
        return memfd

    def set(self, frontend: int, worker: int, runs: int) -> None:
        """Front end ``frontend``'s runs in flight on ``worker`` (only that front end writes)."""
        self._words[frontend * self.workers + worker] = runs

    def writer(self, frontend: int, worker: int) -> Callable[[int], None]:
        """:meth:`set` of one slot, as a callable that runs no Python code (a run link calls it
        twice per run)."""
        if not (0 <= frontend < self.frontends and 0 <= worker < self.workers):
            raise ValueError(
                f"no slot ({frontend}, {worker}) in a {self.frontends}x{self.workers} table"
            )
        return functools.partial(self._words.__setitem__, frontend * self.workers + worker)

    def load(self, worker: int) -> int:
        """Runs in flight on ``worker`` over every front end."""
        return sum(self._words[worker : self._slots : self.workers])

    def clear_row(self, frontend: int) -> None:
        """Zero front end ``frontend``'s slots (it starts, or it died)."""
        for worker in range(self.workers):
            self.set(frontend, worker, 0)

    def close(self) -> None:
        """Unmap (idempotent)."""
        if not self._mmap.closed:
            self._words.release()
            self._mmap.close()


class SharedLoadDispatcher(Dispatcher):
    """Front end ``frontend``'s run side, routing by ``table`` (see the module doc)."""

    def __init__(self, table: LoadTable, frontend: int, *, max_in_flight: int = 2) -> None:
        super().__init__(max_in_flight=max_in_flight)
        self.table = table
        self.frontend = frontend
        table.clear_row(frontend)

    def attach(self, endpoint: Endpoint) -> RunLink:
        """The run link over ``endpoint``, publishing its runs in flight in this front end's
        slot of the table."""
        link = RunLink(
            endpoint,
            asyncio.get_running_loop(),
            on_run_done=self.wake,
            run_times=self.run_times,
            publish=self.table.writer(self.frontend, endpoint.index),
        )
        self.add_link(link)
        return link

    def _choose(self, candidates: list[RunLink]) -> RunLink | None:
        """The least loaded over all front ends (:class:`LoadTable`) with a free slot here."""
        if len(candidates) == 1:  # one worker hosts it: nothing to compare
            only = candidates[0]
            return only if only.runs_in_flight < self.max_in_flight else None
        table = self.table
        best = min(candidates, key=lambda x: (table.load(x.index), x.runs_in_flight))
        if best.runs_in_flight < self.max_in_flight:
            return best
        # The globally least loaded is at this front end's own cap: any other with room.
        free = [x for x in candidates if x.runs_in_flight < self.max_in_flight]
        return min(free, key=lambda x: table.load(x.index)) if free else None
