"""Request log files: records queued on the event loop, built and written by one thread.

A :class:`LogWriter` owns the files of one ``filename_prefix`` in one process. The loop only
queues a job (:meth:`LogWriter.put`: never blocks; False when the queue is full, and the caller
counts the drop); the writer's thread runs each job (it builds and frames the record: protobuf
copies and serialization stay off the loop) and appends the record to the current file.

Files are ``<filename_prefix>-<pid>-<NNNNN>.tfrecord``: the process id keeps the files of several
front ends (and of a restarted process) apart, so no file ever has two writers; a file is
closed and the next one started before a record would take it past ``max_file_bytes`` (a file
holds at least one record). Each file is a TFRecord stream of whole records: after a failed
write the file is left and the next one started. The current file is flushed whenever the queue
runs empty and closed at :meth:`LogWriter.close`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import BinaryIO

log = logging.getLogger(__name__)

Job = Callable[[], bytes]
"""Builds one framed TFRecord record (called in the writer's thread)."""

Opener = Callable[[str], BinaryIO]
"""Opens a log file by path for appending (binary)."""


def append(path: str) -> BinaryIO:
    """The default :data:`Opener`: the file created if missing, appended to otherwise."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "ab")


class LogWriter:
    """One prefix's files (see the module doc). ``max_pending``: jobs the queue holds (>= 1);
    ``max_file_bytes``: the size at which a file is rotated (>= 1)."""

    def __init__(
        self, prefix: str, *, max_pending: int, max_file_bytes: int, opener: Opener = append
    ) -> None:
        self.prefix = prefix
        self.written = 0
        """Records written so far (read it after :meth:`close`)."""
        self.failed = 0
        """Jobs that raised, or records lost to a file that could not be written."""
        self._max_file_bytes = max_file_bytes
        self._opener = opener
        self._queue: queue.Queue[Job | None] = queue.Queue(max_pending)
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="request-log", daemon=True)
        self._thread.start()

    def put(self, job: Job) -> bool:
        """Queue ``job``; False (nothing queued) when the queue is full. Never blocks."""
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            return False
        return True

    def close(self) -> None:
        """Write what is queued, close the file and end the thread (blocking: call it off the
        loop). Safe to call twice."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def path(self, index: int) -> str:
        """The path of this process's ``index``-th file."""
        return f"{self.prefix}-{self._pid}-{index:05d}.tfrecord"

    def _run(self) -> None:
        file: BinaryIO | None = None
        index, size = 0, 0
        while (job := self._queue.get()) is not None:
            try:
                record = job()
            except Exception:
                self.failed += 1
                log.exception("request log %s: a record could not be built", self.prefix)
                continue
            try:
                if file is not None and size and size + len(record) > self._max_file_bytes:
                    file.close()
                    file, index = None, index + 1
                if file is None:
                    file, size = self._opener(self.path(index)), 0
                file.write(record)
                size += len(record)
                self.written += 1
                if self._queue.empty():
                    file.flush()
            except OSError as exc:
                self.failed += 1
                log.error("request log %s: a record was lost: %s", self.prefix, exc)
                if file is not None:  # never append after a record that may be partial
                    with contextlib.suppress(OSError):
                        file.close()
                    file, index = None, index + 1
        if file is not None:
            file.close()
