"""Object stores on loopback for the storage tests, each its real wire protocol: an S3 server
(moto in server mode), a GCS emulator (gcp-storage-emulator) and Azure's own emulator (Azurite,
from npm), each started as a process of its own on an OS-chosen port and reached through a
:class:`CutProxy`, which cuts the store's port (connections reset, new ones refused) without
stopping the store, so nothing it holds is lost.

Each :class:`StoreServer` gives the environment a gateway (or an SDK client) needs to reach it
(``env``: endpoints and test credentials, the standard variables only), a bucket, and
``put`` / ``delete`` through the cloud's own SDK.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.listening import port_of
from tests.support.tools import executable, package

AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
"""Azurite's well-known development account and key (published with Azurite; no secret)."""
S3_KEY_ID = "AKIATENSORGATETEST00"
S3_SECRET = "tensorgate-test-secret-key-do-not-log"
"""The S3 test credentials: moto accepts any; tests look for the secret in logs and errors."""


class CutProxy:
    """A TCP proxy on 127.0.0.1 in front of ``target_port``. :meth:`cut` resets every
    connection and every new one until :meth:`restore` (the store behind stays up)."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._cut = threading.Event()
        self.refused = 0
        """Connections reset on arrival because the link was cut (the client tried)."""
        self._closed = False
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept, name="cut-proxy", daemon=True)
        self._thread.start()

    def cut(self) -> None:
        """Reset every connection now, and each new one until :meth:`restore`."""
        self._cut.set()
        with self._lock:
            for sock in list(self._sockets):
                _reset(sock)
            self._sockets.clear()

    def restore(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self._closed = True
        self.cut()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(10)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._cut.is_set() or self._closed:
                self.refused += 1
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target), timeout=5)
            except OSError:
                _reset(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(1 << 16):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
            with self._lock:
                if source in self._sockets:  # the other pump closes its source: this one's sink
                    self._sockets.discard(source)
                    source.close()


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a reset (SO_LINGER 0), as a cut link looks to its peer."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    with contextlib.suppress(OSError):
        sock.close()


class StoreServer:
    """One emulator process behind a :class:`CutProxy`; subclasses say how to start and use it."""

    scheme = ""
    bucket = "models"
    stop_signal = signal.SIGTERM

    def __init__(self, log_dir: Path) -> None:
        self._sdk: Any = None
        self.log_path = log_dir / f"{self.scheme}-store.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=self.server_env()
            )
        try:
            self.store_port = port_of(self.process, f"the {self.scheme}:// store")
            self.proxy = CutProxy(self.store_port)
            self.setup()
        except BaseException:
            self.close()
            raise

    def command(self) -> list[str]:
        raise NotImplementedError

    def server_env(self) -> dict[str, str]:
        return {**os.environ}

    def setup(self) -> None:
        """Create the bucket."""

    @property
    def env(self) -> dict[str, str]:
        """What a client needs to reach the store through the proxy (standard variables)."""
        raise NotImplementedError

    def url(self, *parts: str) -> str:
        return "/".join([f"{self.scheme}://{self.bucket}", *parts])

    def put(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def delete(self, prefix: str) -> None:
        raise NotImplementedError

    def put_tree(self, root: Path, prefix: str) -> None:
        """Every file under ``root`` at ``prefix/<relative path>``."""
        for path in sorted(root.rglob("*")):
            if path.is_file():
                self.put(f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes())

    def close(self) -> None:
        if self._sdk is not None:
            self._sdk.close()
        proxy = getattr(self, "proxy", None)
        if proxy is not None:
            proxy.close()
        if self.process.poll() is None:
            self.process.send_signal(self.stop_signal)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class S3Server(StoreServer):
    scheme = "s3"

    def command(self) -> list[str]:
        package("moto")
        return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"]

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": S3_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": S3_SECRET,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.proxy.port}",
        }

    def _client(self) -> Any:
        if self._sdk is None:
            self._sdk = self._new_client()
        return self._sdk

    def _new_client(self) -> Any:
        import boto3

        env = self.env
        return boto3.session.Session(
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name="us-east-1",
        ).client("s3", endpoint_url=f"http://127.0.0.1:{self.store_port}")

    def setup(self) -> None:
        self._client().create_bucket(Bucket=self.bucket)

    def put(self, key: str, data: bytes) -> None:
        self._client().put_object(Bucket=self.bucket, Key=key, Body=data)

    def delete(self, prefix: str) -> None:
        client = self._client()
        listed = client.list_objects_v2(Bucket=self.bucket, Prefix=prefix).get("Contents", [])
        for item in listed:
            client.delete_object(Bucket=self.bucket, Key=item["Key"])


class GcsServer(StoreServer):
    scheme = "gs"

    def command(self) -> list[str]:
        package("gcp_storage_emulator")
        return [
            sys.executable, "-m", "gcp_storage_emulator", "start",
            "--host", "127.0.0.1", "--port", "0", "--in-memory", "-q",
        ]  # fmt: skip

    @property
    def env(self) -> dict[str, str]:
        return {"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{self.proxy.port}"}

    def _bucket(self) -> Any:
        if self._sdk is None:
            self._sdk = self._new_client()
        return self._sdk.bucket(self.bucket)

    def _new_client(self) -> Any:
        from gateway.storage.gcs import sdk

        storage = sdk()
        from google.auth.credentials import AnonymousCredentials

        client = storage.Client(
            project="test",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": f"http://127.0.0.1:{self.store_port}"},
        )
        return client

    def setup(self) -> None:
        self._bucket().create()

    def put(self, key: str, data: bytes) -> None:
        self._bucket().blob(key).upload_from_string(data)

    def delete(self, prefix: str) -> None:
        for blob in list(self._bucket().list_blobs(prefix=prefix)):
            blob.delete()


class AzuriteServer(StoreServer):
    scheme = "az"
    stop_signal = signal.SIGKILL  # in memory: nothing to keep; it takes 10 s to stop otherwise

    def command(self) -> list[str]:
        return [
            executable("azurite-blob"), "--blobHost", "127.0.0.1", "--blobPort", "0",
            "--inMemoryPersistence", "--skipApiVersionCheck", "--silent",
        ]  # fmt: skip

    def connection_string(self, port: int, key: str = AZURITE_KEY) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={key};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
        )

    @property
    def env(self) -> dict[str, str]:
        return {"AZURE_STORAGE_CONNECTION_STRING": self.connection_string(self.proxy.port)}

    def _container(self) -> Any:
        if self._sdk is None:
            from azure.storage.blob import BlobServiceClient

            self._sdk = BlobServiceClient.from_connection_string(
                self.connection_string(self.store_port)
            )
        return self._sdk.get_container_client(self.bucket)

    def setup(self) -> None:
        self._container().create_container()

    def put(self, key: str, data: bytes) -> None:
        self._container().upload_blob(key, data, overwrite=True)

    def delete(self, prefix: str) -> None:
        container = self._container()
        for blob in list(container.list_blobs(name_starts_with=prefix)):
            container.delete_blob(blob.name)


SERVERS: dict[str, type[StoreServer]] = {"s3": S3Server, "gs": GcsServer, "az": AzuriteServer}


@contextlib.contextmanager
def store_server(scheme: str, log_dir: Path) -> Iterator[StoreServer]:
    """A running store of ``scheme`` (stopped on exit), after the storage extra is checked."""
    package("boto3", "`make venv` installs it (the [storage] extra)")
    server = SERVERS[scheme](log_dir)
    try:
        yield server
    finally:
        server.close()
