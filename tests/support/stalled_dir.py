"""A directory where opening anything blocks in the kernel until released: what a hung network
mount or a stalled disk does to a process writing there.

:func:`stalled` marks the directory with a fanotify permission event (``FAN_OPEN_PERM`` on the
directory and its entries) that nobody answers while the context is open; on exit the fanotify
group is closed and every open it held goes on. The blocked thread sits in ``open(2)`` with
Python's GIL released, like one waiting on a dead NFS server. Never open the directory (or
anything in it) from the test's own process meanwhile: it would block as well.

Permission events need ``CAP_SYS_ADMIN``; without it the test skips, or fails under ``make test``
(:func:`tests.support.tools.missing`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

from tests.support.tools import missing

FAN_CLOEXEC = 0x1
FAN_CLASS_CONTENT = 0x4
FAN_MARK_ADD = 0x1
FAN_OPEN_PERM = 0x10000
FAN_EVENT_ON_CHILD = 0x08000000
AT_FDCWD = -100


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
    libc.fanotify_mark.argtypes = [
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint64,
        ctypes.c_int,
        ctypes.c_char_p,
    ]
    return libc


@contextlib.contextmanager
def stalled(directory: Path) -> Iterator[None]:
    """While open, every ``open`` of ``directory`` or of an entry in it blocks."""
    libc = _libc()
    fd = libc.fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, os.O_RDONLY)
    if fd < 0:
        errno = ctypes.get_errno()
        missing(f"fanotify permission events are not available here ({os.strerror(errno)})")
    try:
        mask = FAN_OPEN_PERM | FAN_EVENT_ON_CHILD
        if libc.fanotify_mark(fd, FAN_MARK_ADD, mask, AT_FDCWD, os.fsencode(directory)) < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"fanotify_mark {directory}: {os.strerror(errno)}")
        yield
    finally:
        os.close(fd)  # what it held goes on
