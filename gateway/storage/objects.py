"""What the model lifecycle asks of an object store, whichever cloud: list a prefix, download an
object as listed, read a small object. One client per bucket, built on first use from the
standard environment of its SDK (:mod:`~gateway.storage.s3`, :mod:`~gateway.storage.gcs`,
:mod:`~gateway.storage.azure_blob`) and kept.

Every method blocks (the SDKs are synchronous): callers run them in threads, never on an event
loop. Each raises :class:`~gateway.storage.failures.StoreError` for a failure of the store, and
:class:`~gateway.storage.failures.ExtraMissing` when its SDK is not installed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from gateway.storage.failures import StoreError
from gateway.storage.urls import ObjectUrl

CHUNK_BYTES = 1 << 20
"""Bytes read from a download stream at a time (the stop flag is looked at between chunks)."""


@dataclass(frozen=True)
class ObjectInfo:
    """One object as a listing shows it: its full ``key`` in the bucket, ``size`` in bytes and
    ``tag``, what changes when it is replaced (S3 and Azure: the ETag; GCS: the generation)."""

    key: str
    size: int
    tag: str


class ObjectStore(Protocol):
    """One bucket (Azure: one container)."""

    def list(self, prefix: str) -> list[ObjectInfo]:
        """Every object whose key starts with ``prefix`` (all pages; no delimiter)."""
        ...

    def download(self, obj: ObjectInfo, path: str, stop: threading.Event) -> int:
        """Write ``obj`` to the new file ``path`` only if it still has the listed tag (else
        StoreError ``changed``); the bytes written. StoreError ``unreachable`` once ``stop`` is
        set."""
        ...

    def read(self, key: str) -> bytes:
        """The whole object ``key`` (a config file: small)."""
        ...


StoreOpener = Callable[[ObjectUrl, Mapping[str, str]], ObjectStore]

_stores: dict[tuple[str, str, str], ObjectStore] = {}
_lock = threading.Lock()


def store_for(url: ObjectUrl, env: Mapping[str, str] | None = None) -> ObjectStore:
    """The client of ``url``'s bucket, built from ``env`` (``os.environ``) the first time."""
    name = (url.scheme, url.account, url.bucket)
    with _lock:
        store = _stores.get(name)
        if store is None:
            store = _stores[name] = _OPENERS[url.scheme](url, os.environ if env is None else env)
        return store


def forget_stores() -> None:
    """Drop every client (a test that changes the environment builds new ones)."""
    with _lock:
        _stores.clear()


def read_object(url: ObjectUrl) -> bytes:
    """The object at ``url`` (StoreError, ExtraMissing)."""
    return store_for(url).read(url.key)


def _s3(url: ObjectUrl, env: Mapping[str, str]) -> ObjectStore:
    from gateway.storage.s3 import S3Store

    return S3Store(url, env)


def _gcs(url: ObjectUrl, env: Mapping[str, str]) -> ObjectStore:
    from gateway.storage.gcs import GcsStore

    return GcsStore(url, env)


def _azure(url: ObjectUrl, env: Mapping[str, str]) -> ObjectStore:
    from gateway.storage.azure_blob import AzureStore

    return AzureStore(url, env)


_OPENERS: dict[str, StoreOpener] = {"s3": _s3, "gs": _gcs, "az": _azure}


def write_stream(read: Callable[[int], bytes], path: str, stop: threading.Event, what: str) -> int:
    """Copy a stream (``read(n)`` → up to n bytes, b"" at its end) into the new file ``path``;
    the bytes written. Raises StoreError ``unreachable`` (operation ``what``) once ``stop`` is
    set."""
    written = 0
    with open(path, "xb") as out:
        while chunk := read(CHUNK_BYTES):
            if stop.is_set():
                raise StoreError("unreachable", what, "download", "stopped (shutting down)")
            out.write(chunk)
            written += len(chunk)
    return written
