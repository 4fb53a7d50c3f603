"""The one port a tool started on port 0 listens on, once it does (Prometheus's
``--web.listen-address=127.0.0.1:0`` does not report it)."""

from __future__ import annotations

import contextlib
import os
import subprocess

from tests.support.waits import until


def listening_ports(pid: int) -> set[int]:
    """The ports of the TCP sockets in LISTEN state that ``pid`` holds open (IPv4 and IPv6)."""
    inodes = set()
    with contextlib.suppress(FileNotFoundError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(int(target[len("socket:[") : -1]))
    ports = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(FileNotFoundError), open(f"/proc/{pid}/net/{table}") as rows:
            next(rows)  # the header
            for row in rows:
                fields = row.split()
                local, state, inode = fields[1], fields[3], int(fields[9])
                if state == "0A" and inode in inodes:  # 0A: TCP_LISTEN
                    ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def port_of(process: subprocess.Popen[bytes], what: str) -> int:
    """The one port ``process`` listens on, once it does (bounded); AssertionError if it exits
    first or listens on several."""
    found: set[int] = set()

    def listening() -> bool:
        found.update(listening_ports(process.pid))
        if not found and process.poll() is not None:
            raise AssertionError(f"{what} exited ({process.returncode}) before it listened")
        return bool(found)

    until(listening, f"{what} listening")
    assert len(found) == 1, f"{what} listens on several ports: {sorted(found)}"
    return found.pop()
