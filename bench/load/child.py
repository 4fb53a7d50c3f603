"""Helper processes of the harness (load-generator shares, raw-runtime loops).

Started with ``subprocess`` rather than ``multiprocessing`` (whose spawn start method leaves a
resource-tracker process behind for the life of the parent), they talk to the parent over a
socketpair wrapped in :class:`multiprocessing.connection.Connection` (pickled messages, ``poll``
with a timeout). The child runs ``module:function(conn, *args)`` and exits when it returns.
"""

from __future__ import annotations

import contextlib
import importlib
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
JOIN_TIMEOUT_S = 30.0


class Child:
    """A running helper: its process and the parent's end of the connection."""

    def __init__(self, target: str, *args: Any) -> None:
        parent, child = socket.socketpair()
        with child:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "bench.load.child", str(child.fileno()), target],
                pass_fds=(child.fileno(),),
                cwd=REPO,
            )
        self.conn = Connection(parent.detach())
        self.conn.send(args)

    def close(self) -> None:
        """Close the connection and reap the process (killed if it outlives the timeout)."""
        self.conn.close()
        try:
            self.process.wait(JOIN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()


def main() -> None:
    fd, target = int(sys.argv[1]), sys.argv[2]
    module, _, function = target.partition(":")
    conn = Connection(fd)
    try:
        args = conn.recv()
        getattr(importlib.import_module(module), function)(conn, *args)
    finally:
        conn.close()


if __name__ == "__main__":
    main()
