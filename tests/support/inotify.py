"""What the kernel says about a path: Linux inotify, through libc. A test waits on the kernel's
word that some process opened or read a path (a worker its model file, a poll a model's base
path), never on a log line about it."""

from __future__ import annotations

import ctypes
import os
import select
import struct
import time
from pathlib import Path

from tests.support.waits import WAIT_S

IN_CLOSE_NOWRITE = 0x10
"""A file or directory opened without writing was closed: it has been read."""
IN_OPEN = 0x20
_EVENT = struct.Struct("iIII")
"""struct inotify_event without its name: wd, mask, cookie, len."""

_libc = ctypes.CDLL(None, use_errno=True)


class PathEvents:
    """The events ``mask`` on ``path`` itself (not on what a directory holds), counted from now
    on. Close it (or use it as a context manager)."""

    def __init__(self, path: Path, mask: int) -> None:
        self.path = path
        self._fd = _checked(_libc.inotify_init1(os.O_CLOEXEC | os.O_NONBLOCK))
        try:
            _checked(_libc.inotify_add_watch(self._fd, os.fsencode(path), mask))
        except BaseException:
            os.close(self._fd)
            raise
        self.seen = 0

    def __enter__(self) -> PathEvents:
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self._fd)

    def read(self) -> int:
        """Count what arrived since the last read (without waiting); the total seen so far."""
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return self.seen
            offset = 0
            while offset < len(data):
                _, _, _, name_len = _EVENT.unpack_from(data, offset)
                self.seen += name_len == 0  # an event on the path itself carries no name
                offset += _EVENT.size + name_len

    def wait(self, more: int, what: str, timeout_s: float = WAIT_S) -> None:
        """Wait (bounded) until ``more`` events arrive past those counted by the last
        :meth:`read` (none yet: past the start of the watch). Events that came since, unread,
        count: call :meth:`read` first to count from now."""
        wanted = self.seen + more
        deadline = time.monotonic() + timeout_s
        while self.read() < wanted:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never saw within {timeout_s} s: {what} ({self.path})")
            select.select([self._fd], [], [], left)


def _checked(result: int) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result
