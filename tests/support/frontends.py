"""Reaching each front end of a real multi-front-end gateway, and watching its processes.

``SO_REUSEPORT`` lets the kernel choose the front end of each new connection; a test that must
speak to a given front end opens connections one at a time until it has one to each, telling
which process accepted each by the socket that appeared among that process's descriptors (an
observable state, read from ``/proc``). With two front ends, 64 tries all landing on one happen
with probability 2**-63.
"""

from __future__ import annotations

import contextlib
import http.client
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.gateway_proc import GatewayProcess, front_end_pids

ATTEMPTS = 64
C = TypeVar("C", grpc.Channel, http.client.HTTPConnection)


def sockets_of(pid: int) -> set[str]:
    """The socket inodes ``pid`` holds now."""
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:"):
                found.add(link)
    return found


def _accepted_by(pids: list[int], connect: Callable[[], C]) -> tuple[int, C]:
    """Connect, and tell which of ``pids`` accepted (the one holding a new socket)."""
    before = {pid: sockets_of(pid) for pid in pids}
    connection = connect()
    owners = [pid for pid in pids if sockets_of(pid) - before[pid]]
    if len(owners) != 1:
        raise AssertionError(f"new sockets in {owners} of {pids}")
    return owners[0], connection


def grpc_channels(target: str, pids: list[int]) -> dict[int, grpc.Channel]:
    """A channel to each front end in ``pids``, by pid, each its own connection (close them)."""

    def connect() -> grpc.Channel:
        channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
        health = health_pb2_grpc.HealthStub(channel)
        health.Check(health_pb2.HealthCheckRequest(), timeout=30)  # accepted and answered
        return channel

    return _one_each(pids, connect)


def rest_connections(port: int, pids: list[int]) -> dict[int, http.client.HTTPConnection]:
    """A keep-alive HTTP connection to each front end in ``pids``, by pid."""

    def connect() -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/healthz")
        connection.getresponse().read()  # accepted and answered
        return connection

    return _one_each(pids, connect)


def _one_each(pids: list[int], connect: Callable[[], C]) -> dict[int, C]:
    """Connections from ``connect`` until each of ``pids`` accepted one (the extra ones closed)."""
    found: dict[int, C] = {}
    for _ in range(ATTEMPTS):
        pid, connection = _accepted_by(pids, connect)
        if pid in found:
            connection.close()
        else:
            found[pid] = connection
        if len(found) == len(pids):
            return found
    raise AssertionError(f"no connection reached every front end in {ATTEMPTS} tries")


def get(connection: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, response.read()


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


Reached = tuple[list[int], dict[int, grpc.Channel], dict[int, http.client.HTTPConnection]]
"""The front ends' pids, a gRPC channel to each and a REST connection to each, by pid."""


@contextmanager
def reach_each(gateway: GatewayProcess) -> Iterator[Reached]:
    """A gRPC channel and a REST connection to each front end of ``gateway``, closed on exit."""
    fronts = front_end_pids(gateway.pid)
    channels = grpc_channels(gateway.target, fronts)
    rests = rest_connections(gateway.rest_port, fronts)
    try:
        yield fronts, channels, rests
    finally:
        for connection in [*channels.values(), *rests.values()]:
            connection.close()
