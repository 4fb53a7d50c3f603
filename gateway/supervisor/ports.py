"""The ports every front end binds, chosen and held by the supervisor.

Front ends listen on the same gRPC and REST ports with ``SO_REUSEPORT``, so the port must be
known before they start, also when the flag says 0 (an OS-chosen port), and must not be shared
with anything else. The supervisor binds, without listening, one socket per address the servers
will listen on: first without ``SO_REUSEPORT`` (a port anybody holds, another tensorgate
included, is refused at once with the message a single process gives), then, once free, again
with it, and keeps those sockets until it exits. A socket that is bound but not listening takes
no connections (only listening sockets join the kernel's reuseport group) and keeps the port
from being taken by anything that does not set ``SO_REUSEPORT`` as the same user, even while
every front end restarts.

Where the servers listen (:mod:`gateway.listen`, :mod:`gateway.transport.http.server`): ``""`` is
every interface — gRPC one dual-stack IPv6 socket (IPv4 when the host has no IPv6), REST one IPv4
and one IPv6-only socket — and an IP literal is that address alone.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from dataclasses import dataclass, field

from gateway.listen import ListenError


@dataclass
class Reservation:
    """A port held by bound, non-listening sockets (released by :meth:`close`)."""

    port: int
    sockets: list[socket.socket] = field(default_factory=list)

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        self.sockets.clear()


def _addresses(host: str, dual_stack: bool) -> list[tuple[socket.AddressFamily, str, bool]]:
    """(family, address, v6only) of each socket the servers bind for ``host``."""
    if host:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
        return [(family, host, True)]
    if not socket.has_ipv6:
        return [(socket.AF_INET, "0.0.0.0", False)]
    if dual_stack:
        return [(socket.AF_INET6, "::", False)]
    return [(socket.AF_INET, "0.0.0.0", False), (socket.AF_INET6, "::", True)]


def _bind(
    family: socket.AddressFamily, address: str, port: int, v6only: bool, reuse: bool
) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, int(v6only))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((address, port))
    except BaseException:
        sock.close()
        raise
    return sock


def reserve(what: str, host: str, port: int, *, dual_stack: bool) -> Reservation:
    """Hold ``port`` (0: one the OS picks) on every address the servers bind for ``host``.
    ``dual_stack``: how gRPC listens on ``""`` (one IPv6 socket that takes IPv4 too) rather than
    the REST server (one socket per family). ListenError when it is taken. ``what`` names it
    ("gRPC")."""
    reservation = Reservation(port)
    try:
        for family, address, v6only in _addresses(host, dual_stack):
            try:
                if reservation.port:  # nobody else may hold it, not even with SO_REUSEPORT
                    _bind(family, address, reservation.port, v6only, reuse=False).close()
                sock = _bind(family, address, reservation.port, v6only, reuse=True)
            except OSError as exc:
                if family == socket.AF_INET6 and not host and exc.errno == 97:  # EAFNOSUPPORT
                    continue
                raise ListenError(
                    f"cannot listen for {what} on {host or '*'}:{reservation.port}: {exc.strerror}"
                ) from None
            reservation.sockets.append(sock)
            reservation.port = sock.getsockname()[1]
    except BaseException:
        with contextlib.suppress(OSError):
            reservation.close()
        raise
    return reservation
