"""Request log writers: records queued on the event loop, built and written by one thread per
prefix.

A :class:`LogWriter` owns one ``filename_prefix``'s files in one process
(:class:`~gateway.observability.log_files.LogFiles`). The loop only queues a job with the bytes
it holds (:meth:`LogWriter.put`: never blocks; False when the queue is full, and the caller
counts the drop); the writer's thread runs each job (it builds and frames the record: protobuf
copies and serialization stay off the loop) and writes the record.

**Bounds.** A writer's queue holds at most ``max_pending`` jobs, and all the writers of a process
together at most :class:`PendingBytes`' ``limit_bytes`` of jobs
(``--request_log_max_pending_bytes``: what the queued calls' requests and responses hold, as
their protocol estimates it; one job alone may pass it), each counted from its put until its
record is written or dropped. A writer that cannot write (a hung mount, a stalled disk)
therefore holds at most that much memory (or one call's); later records are dropped and
counted.

**Failures.** A record that cannot be written is dropped. The first failure of an outage is
logged with its cause; the writer then pauses (:data:`FIRST_PAUSE_S`, doubling to
:data:`MAX_PAUSE_S`): records reaching it meanwhile are dropped unbuilt and counted, and the first
one after the pause tries a new file. The end of an outage is logged with the records it lost. A
job that raises (a bug) is logged at most once a minute, with a count.

**Shutdown.** :meth:`LogWriter.finish` stops taking records and lets the thread write what is
queued, close its file and end, then calls back; :meth:`LogWriter.abandon` drops what is still
queued without waiting (the thread, a daemon, may be stuck in a write; it ends with the process).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from gateway.observability.log_files import LogFiles
from gateway.transport.quiet_log import Throttled

log = logging.getLogger(__name__)

FIRST_PAUSE_S = 1.0
"""Seconds a writer pauses after the first failed write of an outage."""
MAX_PAUSE_S = 60.0
"""The longest pause: each further failure of an outage doubles it up to this."""

Job = Callable[[], bytes]
"""Builds one framed TFRecord record (called in the writer's thread)."""


class PendingBytes:
    """The bytes of queued jobs of every writer of a process: at most ``limit_bytes`` (>= 1), or
    one job alone however large (so a call bigger than the budget can still be logged when
    nothing else waits). Thread-safe: the loop takes, the writers' threads give back."""

    def __init__(self, limit_bytes: int) -> None:
        if limit_bytes < 1:
            raise ValueError(f"limit_bytes must be >= 1, got {limit_bytes}")
        self.limit_bytes = limit_bytes
        self.held_bytes = 0
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> bool:
        """Hold ``nbytes`` more; False (nothing held) when that would pass the limit and
        something is held already."""
        with self._lock:
            if self.held_bytes and self.held_bytes + nbytes > self.limit_bytes:
                return False
            self.held_bytes += nbytes
            return True

    def give(self, nbytes: int) -> None:
        """Give back what :meth:`take` held."""
        with self._lock:
            self.held_bytes -= nbytes


class LogWriter:
    """One prefix's writer (see the module doc): ``files`` written by its own thread;
    ``max_pending``: jobs its queue holds (>= 1); ``budget``: the bytes all writers' queues hold;
    ``clock``: monotonic seconds (for the pauses)."""

    def __init__(
        self,
        files: LogFiles,
        *,
        max_pending: int,
        budget: PendingBytes,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self.prefix = files.prefix
        self.written = 0
        """Records written."""
        self.lost = 0
        """Records dropped because they could not be written (a failed write, or during the
        pause after one)."""
        self.failed = 0
        """Jobs that raised (no record)."""
        self._files = files
        self._max_pending = max_pending
        self._budget = budget
        self._clock = clock
        self._queue: deque[tuple[Job, int]] = deque()
        self._ready = threading.Condition()
        self._closing = False
        self._in_hand = False
        self._ended = False
        self._done: Callable[[], None] | None = None
        self._paused_until: float | None = None
        self._pause_s = 0.0
        self._outage_lost = 0
        self._broken = Throttled(log, f"request log {self.prefix}: a record could not be built")
        self._thread = threading.Thread(target=self._run, name="request-log", daemon=True)
        self._thread.start()

    @property
    def ended(self) -> bool:
        """True once the thread has written what it had and closed the files."""
        return self._ended

    def put(self, job: Job, nbytes: int) -> bool:
        """Queue ``job``, which holds ``nbytes`` until its record is written; False (nothing
        queued) when the queue or the byte budget is full, or the writer is finishing. Never
        blocks."""
        with self._ready:
            if self._closing or len(self._queue) >= self._max_pending:
                return False
            if not self._budget.take(nbytes):
                return False
            self._queue.append((job, nbytes))
            self._ready.notify()
        return True

    def finish(self, done: Callable[[], None] | None = None) -> None:
        """Take no more records; the thread writes what is queued, closes the files, ends, then
        calls ``done`` (from its thread; at once when it has already ended)."""
        with self._ready:
            self._closing = True
            ended = self._ended
            if not ended:
                self._done = done
            self._ready.notify()
        if ended and done is not None:
            done()

    def abandon(self) -> int:
        """Drop what is still queued, and take no more: the records not written (counting the
        one the thread holds, if it has not ended)."""
        with self._ready:
            self._closing = True
            dropped = len(self._queue) + int(self._in_hand)
            for _, nbytes in self._queue:
                self._budget.give(nbytes)
            self._queue.clear()
            self._ready.notify()
        return dropped

    def close(self, timeout_s: float | None = None) -> bool:
        """:meth:`finish` and wait (blocking: off the loop) up to ``timeout_s`` (None: no
        bound); True once the thread has ended."""
        ended = threading.Event()
        self.finish(ended.set)
        return ended.wait(timeout_s)

    # -- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closing:
                    self._ready.wait()
                if not self._queue:
                    break
                job, nbytes = self._queue.popleft()
                self._in_hand = True
            try:
                self._handle(job)
            finally:
                self._budget.give(nbytes)
                with self._ready:
                    self._in_hand = False
        self._files.release()
        with self._ready:
            self._ended = True
            done, self._done = self._done, None
        if done is not None:
            done()

    def _handle(self, job: Job) -> None:
        now = self._clock()
        if self._paused_until is not None and now < self._paused_until:
            self.lost += 1
            self._outage_lost += 1
            return
        try:
            record = job()
        except Exception as exc:
            self.failed += 1
            self._broken(f"{type(exc).__name__}: {exc}")
            return
        try:
            self._files.write(record)
        except OSError as exc:
            self._failed(exc, now)
            return
        self.written += 1
        if self._paused_until is not None:
            log.warning(
                "request log %s: writing again; %d record(s) were dropped meanwhile",
                self.prefix,
                self._outage_lost,
            )
            self._paused_until, self._pause_s, self._outage_lost = None, 0.0, 0

    def _failed(self, exc: OSError, now: float) -> None:
        self.lost += 1
        self._outage_lost += 1
        if self._paused_until is None:
            self._pause_s = FIRST_PAUSE_S
            log.error(
                "request log %s: a record could not be written (%s); records are dropped until "
                "writing works again (next try in %g s, then less often)",
                self.prefix,
                exc,
                self._pause_s,
            )
        else:
            self._pause_s = min(2 * self._pause_s, MAX_PAUSE_S)
        self._paused_until = now + self._pause_s
