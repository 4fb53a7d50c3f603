"""What the model lifecycle asks of an object store, whichever cloud: list a prefix, download an
object as listed, read a small object (each cloud's client: :mod:`~gateway.storage.s3`,
:mod:`~gateway.storage.gcs`, :mod:`~gateway.storage.azure_blob`; one per bucket:
:mod:`~gateway.storage.stores`).

Every method blocks (the SDKs are synchronous): callers run them in threads, never on an event
loop. Each raises :class:`~gateway.storage.failures.StoreError` for a failure of the store, and
:class:`~gateway.storage.failures.ExtraMissing` when its SDK is not installed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gateway.storage.failures import StoreError

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
