"""One request log prefix's files in one process: each created new, never reopened, the prefix's
total bytes capped.

:class:`LogFiles` is used by one writer thread only (:mod:`~gateway.observability.log_writer`):

- **Names**: ``<prefix>-<pid>-<token>-<NNNNN>.tfrecord``. ``token`` is 8 random hex digits drawn
  when the files start and drawn again whenever a name is taken, so no earlier process (a
  container restarting with the same pid) and nobody guessing owns a name this process writes;
  ``NNNNN`` counts this object's files.
- **Creation**: in the prefix's directory, opened once (a later rename or symlink swap of its path
  does not move the files; it is opened again only after a failure), with ``O_CREAT | O_EXCL |
  O_NOFOLLOW``: a file, FIFO or symlink planted at the name is never opened, and no file is ever
  appended to (a taken name draws a new token).
- **Writes**: one ``write`` per whole record. After a failed write the file is cut back to its
  last whole record and closed (removed when that leaves it empty), so every file is a valid
  TFRecord stream; the next record starts a new file. A file is closed and the next one started
  before a record would take it past ``max_file_bytes`` (a file holds at least one record), and
  when someone removed it (its link count is 0: another process's cap, an operator).
- **Cap** (``max_total_bytes``; 0: none): before a file is started, the prefix's files in its
  directory — every process's, recognised by this name pattern, regular files only — are summed,
  and the oldest (modification time, then name) are removed until they and one full file fit.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable

NAME_PATTERN = r"-[0-9]+-[0-9a-f]{8}-[0-9]{5}\.tfrecord"
"""What follows the prefix's last component in a log file's name."""

NAME_TRIES = 8
"""Tokens tried before giving up on creating a file (each taken name draws a new one)."""

FILE_MODE = 0o640


def _token() -> str:
    return os.urandom(4).hex()


class LogFiles:
    """``prefix``'s files (see the module doc). ``max_file_bytes``: size at which a file is
    rotated (>= 1); ``max_total_bytes``: the cap on the prefix's files (0: none); ``draw``: a new
    token (injectable for tests)."""

    def __init__(
        self,
        prefix: str,
        *,
        max_file_bytes: int,
        max_total_bytes: int = 0,
        draw: Callable[[], str] = _token,
    ) -> None:
        if max_file_bytes < 1:
            raise ValueError(f"max_file_bytes must be >= 1, got {max_file_bytes}")
        self.prefix = prefix
        self.directory, self.base = os.path.split(prefix)
        self._max_file_bytes = max_file_bytes
        self._max_total_bytes = max_total_bytes
        self._pattern = re.compile(re.escape(self.base) + NAME_PATTERN)
        self._pid = os.getpid()
        self._draw = draw
        self._token = draw()
        self._index = 0
        self._dir_fd: int | None = None
        self._fd: int | None = None
        self._name = ""
        self._size = 0
        self.removed = 0
        """Files removed to keep the prefix under ``max_total_bytes``."""

    @property
    def current(self) -> str | None:
        """The path of the file being written (None between files)."""
        return None if self._fd is None else os.path.join(self.directory, self._name)

    def write(self, record: bytes) -> None:
        """Append one whole record, starting a file when needed. OSError: nothing of the record
        stays, and the file it was meant for is closed."""
        fd = self._fd
        if fd is not None and (
            (self._size and self._size + len(record) > self._max_file_bytes)
            or os.fstat(fd).st_nlink == 0
        ):
            self.close()
            fd = None
        if fd is None:
            fd = self._start()
        try:
            view = memoryview(record)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            self._abandon()
            raise
        self._size += len(record)

    def close(self) -> None:
        """Close the current file (the next record starts a new one)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def release(self) -> None:
        """Close the current file and the directory."""
        self.close()
        self._close_directory()

    # -- files ------------------------------------------------------------------------------------
    def _start(self) -> int:
        try:
            if self._dir_fd is None:
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
                self._dir_fd = os.open(self.directory or ".", flags)
            if self._max_total_bytes:
                self._trim(self._dir_fd)
            fd = self._create(self._dir_fd)
        except OSError:
            self._close_directory()  # found again by its path next time (it may be recreated)
            raise
        self._fd, self._size = fd, 0
        return fd

    def _create(self, dir_fd: int) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(NAME_TRIES):
            name = f"{self.base}-{self._pid}-{self._token}-{self._index:05d}.tfrecord"
            try:
                fd = os.open(name, flags, FILE_MODE, dir_fd=dir_fd)
            except FileExistsError:
                self._token = self._draw()
                continue
            self._name = name
            self._index += 1
            return fd
        raise FileExistsError(f"{NAME_TRIES} new names for {self.prefix} were all taken")

    def _abandon(self) -> None:
        """After a failed write: cut the file back to its whole records and close it (an empty
        one is removed)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, self._size)
        os.close(fd)
        if not self._size and self._dir_fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._name, dir_fd=self._dir_fd)

    def _trim(self, dir_fd: int) -> None:
        """Remove the prefix's oldest files until they and one full file fit the cap."""
        files = []
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                if not self._pattern.fullmatch(entry.name):
                    continue
                try:
                    found = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(found.st_mode):
                    files.append((found.st_mtime_ns, entry.name, found.st_size))
        files.sort()
        total = sum(size for _, _, size in files)
        for _, name, size in files:
            if total + self._max_file_bytes <= self._max_total_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dir_fd)
                self.removed += 1
            total -= size

    def _close_directory(self) -> None:
        fd, self._dir_fd = self._dir_fd, None
        if fd is not None:
            os.close(fd)
