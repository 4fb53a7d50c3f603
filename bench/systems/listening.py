"""The TCP ports a process listens on, read from /proc: for a server started on port 0 that does
not report the port the OS gave it (uvicorn, MLServer, KServe, Prometheus)."""

from __future__ import annotations

import contextlib
import http.client
import os


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


def http_status(port: int, path: str) -> int | None:
    """The status of ``GET path`` on 127.0.0.1:``port`` over HTTP/1.1, or None where nothing
    answers HTTP/1.1 there (not listening yet, or a gRPC server)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()
