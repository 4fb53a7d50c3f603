"""Ports held for the front ends: chosen once, shared only with sockets that ask for it."""

from __future__ import annotations

import socket

import pytest

from gateway.listen import ListenError
from gateway.supervisor.ports import reserve


def _listen(port: int, *, reuse: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen()
    except BaseException:
        sock.close()
        raise
    return sock


def test_port_zero_is_chosen_once_and_front_ends_can_share_it() -> None:
    held = reserve("gRPC", "127.0.0.1", 0, dual_stack=True)
    try:
        assert held.port > 0
        first, second = _listen(held.port, reuse=True), _listen(held.port, reuse=True)
        with socket.create_connection(("127.0.0.1", held.port), timeout=5):
            pass  # a listener took it: the held socket never does
        first.close()
        second.close()
        with pytest.raises(OSError):
            _listen(held.port, reuse=False)  # nobody else gets it while held
    finally:
        held.close()


def test_a_port_in_use_is_refused_even_to_reuse_port() -> None:
    other = _listen(0, reuse=True)  # e.g. another tensorgate's front end
    port = other.getsockname()[1]
    try:
        with pytest.raises(ListenError, match=f"cannot listen for REST on 127.0.0.1:{port}"):
            reserve("REST", "127.0.0.1", port, dual_stack=False)
    finally:
        other.close()


def test_every_interface_holds_each_socket_the_servers_bind() -> None:
    rest = reserve("REST", "", 0, dual_stack=False)
    grpc = reserve("gRPC", "", 0, dual_stack=True)
    try:
        families = sorted(s.family for s in rest.sockets)
        assert families == sorted(
            {socket.AF_INET, socket.AF_INET6} if socket.has_ipv6 else {socket.AF_INET}
        )
        assert {s.getsockname()[1] for s in rest.sockets} == {rest.port}
        assert len(grpc.sockets) == 1
    finally:
        rest.close()
        grpc.close()
