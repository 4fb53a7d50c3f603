"""Where the gateway listens: addresses, and a Unix socket path claimed without losing data."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest

from gateway.config.model_config import ConfigError
from gateway.listen import ListenError, TlsMaterial, UnixSocket, grpc_target, shown
from tests.support.certs import make_pki, ssl_config_text


def test_addresses() -> None:
    assert grpc_target("", 8500) == "[::]:8500"
    assert grpc_target("127.0.0.1", 1) == "127.0.0.1:1"
    assert grpc_target("::1", 2) == "[::1]:2"
    assert shown("", 8500) == "0.0.0.0:8500 and [::]:8500"
    assert shown("::1", 2) == "[::1]:2"


def test_a_regular_file_at_the_socket_path_is_never_touched(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("precious")
    with pytest.raises(ListenError, match="exists and is not a socket; tensorgate leaves it"):
        UnixSocket.claim(str(path))
    assert path.read_text() == "precious"
    (tmp_path / "dir").mkdir()
    with pytest.raises(ListenError, match="not a socket"):
        UnixSocket.claim(str(tmp_path / "dir"))
    assert (tmp_path / "dir").is_dir()


def test_a_live_socket_is_refused_and_a_stale_one_removed(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    UnixSocket.claim(path)  # nothing there: nothing to do
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()
    try:
        with pytest.raises(ListenError, match="is in use by another server"):
            UnixSocket.claim(path)
        assert Path(path).exists()
    finally:
        server.close()  # the file stays: a stale socket, as a killed server leaves it
    assert Path(path).is_socket()
    UnixSocket.claim(path)
    assert not Path(path).exists()


def test_release_removes_only_the_socket_this_process_bound(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as first:
        first.bind(path)
        ours = UnixSocket.bound(path)
    Path(path).unlink()
    Path(path).write_text("someone else's file now")
    ours.release()
    assert Path(path).read_text() == "someone else's file now"
    Path(path).unlink()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as again:
        again.bind(path)
        UnixSocket.bound(path).release()
    assert not Path(path).exists()


def test_tls_material_from_an_ssl_config(tmp_path: Path) -> None:
    pki = make_pki()
    config = tmp_path / "ssl.config"
    config.write_text(ssl_config_text(pki, client_verify=True))
    material = TlsMaterial.load(str(config))
    assert (material.key, material.cert, material.ca) == (pki.server.key, pki.server.cert, pki.ca)
    assert material.client_verify
    assert material.ssl_context().verify_mode == ssl.CERT_REQUIRED
    config.write_text('server_key: "k"\n')
    with pytest.raises(ConfigError, match="needs both server_key and server_cert"):
        TlsMaterial.load(str(config))
    config.write_text('server_key: "k"\nserver_cert: "c"\nclient_verify: true\n')
    with pytest.raises(ConfigError, match="client_verify needs custom_ca"):
        TlsMaterial.load(str(config))
    config.write_text('server_key: "not a key"\nserver_cert: "not a cert"\n')
    with pytest.raises(ConfigError, match="do not load"):
        TlsMaterial.load(str(config))
