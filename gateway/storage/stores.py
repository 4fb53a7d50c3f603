"""The client of each bucket: built on first use from the standard environment of its cloud's
SDK (:mod:`~gateway.storage.s3`, :mod:`~gateway.storage.gcs`, :mod:`~gateway.storage.azure_blob`)
and kept, one per (scheme, account, bucket)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping

from gateway.storage.objects import ObjectStore
from gateway.storage.urls import ObjectUrl

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
