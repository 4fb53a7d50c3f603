"""Where and how the gateway listens: gRPC on an address and port and an optional Unix socket,
REST's address, and TLS from ``--ssl_config_file``.

- Addresses: ``""`` listens on every interface, IPv4 and IPv6 (TF Serving's behaviour); an IP
  literal (``127.0.0.1``, ``::1``) listens on that one only (a sidecar's loopback).
- The Unix socket path is claimed safely: nothing there, or a *stale* socket (a socket file that
  nobody accepts on) which is removed; anything else — a regular file, a directory, a socket a live
  server listens on — is a start-up error that touches nothing. At stop, the file is removed only
  if it is still the socket this process bound.
- TLS: the SSLConfig's PEM texts give gRPC its server credentials (``client_verify``: clients
  must present a certificate signed by ``custom_ca``, i.e. mTLS) and, with
  ``--rest_api_enable_tls``, REST an ``ssl.SSLContext`` from the same material.

A failure to listen is :class:`ListenError` (FAILED_PRECONDITION), which ``tensorgate`` reports as
one line and exit status 1.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
import ssl
import stat
from collections.abc import Iterator
from dataclasses import dataclass

import grpc

from gateway.config.model_config import ConfigError, load_ssl_config
from gateway.errors import FailedPrecondition

log = logging.getLogger(__name__)


class ListenError(FailedPrecondition):
    """The gateway cannot listen where it was asked to; the message says where and why."""


def grpc_target(host: str, port: int) -> str:
    """The gRPC address for ``host`` (``""``: every interface) and ``port``."""
    if not host:
        return f"[::]:{port}"
    if ipaddress.ip_address(host).version == 6:
        return f"[{host}]:{port}"
    return f"{host}:{port}"


def shown(host: str, port: int) -> str:
    """``host:port`` as a log line shows a bound address (``""`` is every interface)."""
    if not host:
        return f"0.0.0.0:{port} and [::]:{port}"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def add_grpc_port(
    server: grpc.aio.Server, target: str, credentials: grpc.ServerCredentials | None
) -> int:
    """Listen on ``target`` (with TLS when ``credentials``); the bound port, or ListenError."""
    try:
        if credentials is None:
            port: int = server.add_insecure_port(target)
        else:
            port = server.add_secure_port(target, credentials)
    except RuntimeError:
        raise ListenError(
            f"cannot listen for gRPC on {target}: the address is in use or not available"
        ) from None
    return port


@dataclass(frozen=True)
class UnixSocket:
    """A socket path this process bound (its device and inode tell it from a replacement)."""

    path: str
    device: int
    inode: int

    @staticmethod
    def claim(path: str) -> None:
        """Make ``path`` free to bind: remove a stale socket there; ListenError for anything else
        (nothing is removed then)."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(info.st_mode):
            raise ListenError(
                f"--grpc_socket_path {path} exists and is not a socket; tensorgate leaves it "
                "alone: remove it or choose another path"
            )
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except ConnectionRefusedError:
            os.unlink(path)  # a socket file nobody accepts on: left by a process that died
            log.info("removed the stale socket %s", path)
            return
        except OSError as exc:
            raise ListenError(f"--grpc_socket_path {path}: {exc.strerror}") from None
        finally:
            probe.close()
        raise ListenError(f"--grpc_socket_path {path} is in use by another server")

    @classmethod
    def bound(cls, path: str) -> UnixSocket:
        info = os.lstat(path)
        return cls(path, info.st_dev, info.st_ino)

    def release(self) -> None:
        """Remove the socket file if it is still the one bound here (a socket, same inode)."""
        with contextlib.suppress(FileNotFoundError):
            info = os.lstat(self.path)
            ours = (info.st_dev, info.st_ino) == (self.device, self.inode)
            if ours and stat.S_ISSOCK(info.st_mode):
                os.unlink(self.path)


@dataclass(frozen=True)
class TlsMaterial:
    """The PEM texts of an SSLConfig."""

    key: bytes
    cert: bytes
    ca: bytes
    client_verify: bool

    @classmethod
    def load(cls, path: str) -> TlsMaterial:
        """Read ``--ssl_config_file``; ConfigError for a missing key or certificate, for
        ``client_verify`` without ``custom_ca``, or for PEM texts that do not load."""
        config = load_ssl_config(path)
        if not config.server_key or not config.server_cert:
            raise ConfigError(f"{path}: an SSLConfig needs both server_key and server_cert")
        if config.client_verify and not config.custom_ca:
            raise ConfigError(f"{path}: client_verify needs custom_ca (the clients' CA)")
        material = cls(
            config.server_key.encode(),
            config.server_cert.encode(),
            config.custom_ca.encode(),
            config.client_verify,
        )
        material.ssl_context()  # parses every PEM text: a bad one fails here, not at bind
        return material

    def grpc_credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.key, self.cert)],
            root_certificates=self.ca or None,
            require_client_auth=self.client_verify,
        )

    def ssl_context(self) -> ssl.SSLContext:
        """A server context for REST (TLS 1.2+); ConfigError if the PEM texts do not load."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            with _memory_file(self.cert) as cert, _memory_file(self.key) as key:
                context.load_cert_chain(cert, key)  # the ssl module reads only files
            if self.ca:
                context.load_verify_locations(cadata=self.ca.decode())
        except ssl.SSLError as exc:
            raise ConfigError(f"the SSLConfig's key or certificates do not load: {exc}") from None
        if self.client_verify:
            context.verify_mode = ssl.CERT_REQUIRED
        return context


@contextlib.contextmanager
def _memory_file(data: bytes) -> Iterator[str]:
    """A path to ``data`` that never touches a disk (an anonymous memfd, closed afterwards)."""
    fd = os.memfd_create("tensorgate-tls", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def bind_grpc(
    server: grpc.aio.Server,
    *,
    host: str,
    port: int,
    socket_path: str,
    credentials: grpc.ServerCredentials | None,
) -> tuple[int, UnixSocket | None]:
    """Listen for gRPC on ``host``:``port`` and, if ``socket_path``, on that Unix socket; the
    bound TCP port and the socket to release at stop. Logs what is bound."""
    bound = add_grpc_port(server, grpc_target(host, port), credentials)
    unix = None
    if socket_path:
        UnixSocket.claim(socket_path)
        add_grpc_port(server, f"unix:{socket_path}", credentials)
        unix = UnixSocket.bound(socket_path)
    where = shown(host, bound) + (f" and unix:{socket_path}" if socket_path else "")
    log.info("Running gRPC ModelServer at %s%s ...", where, " (TLS)" if credentials else "")
    return bound, unix
