"""Google Cloud Storage through google-cloud-storage, configured only by Google's standard
environment: ``GOOGLE_APPLICATION_CREDENTIALS`` (a service account or workload identity
federation file), else the metadata server (GKE workload identity, Compute Engine); and
``STORAGE_EMULATOR_HOST`` (a local emulator, without credentials), all read by the library
itself. An object is taken at the generation the listing showed, and its bytes are checked
against the listing's CRC32C: a tag is ``<generation>#<crc32c>``.
"""

from __future__ import annotations

import base64
import importlib
import threading
import warnings
from collections.abc import Mapping
from typing import Any

import google_crc32c

from gateway.storage.failures import ExtraMissing, FailureKind, StoreError
from gateway.storage.objects import ObjectInfo, write_stream
from gateway.storage.urls import ObjectUrl

TIMEOUT_S = (5.0, 30.0)
"""Connect and read timeouts of one request."""
LIST_DEADLINE_S = 5.0
"""How long a listing retries (back-off with jitter) before it fails: a poll, not a load."""
GET_DEADLINE_S = 60.0


def sdk() -> Any:
    """The ``google.cloud.storage`` module (ExtraMissing without it). Its import warns about
    grpcio (not post-quantum ready; grpcio-status missing): the gRPC transport is not used here
    (the JSON API goes over HTTPS) and grpcio's version is this project's measured choice, so
    those warnings are not let out (they would be errors under the test suite's filter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for module in ("google.api_core.exceptions", "google.auth.exceptions"):
                importlib.import_module(module)
            from google.cloud import storage
        except ImportError:
            raise ExtraMissing("gs", "google-cloud-storage") from None
    return storage


class GcsStore:
    """One GCS bucket."""

    def __init__(self, url: ObjectUrl, env: Mapping[str, str]) -> None:
        storage = sdk()
        from google.cloud.storage.retry import DEFAULT_RETRY

        self.where = url.store
        self._bucket_name = url.bucket
        self._list_retry = DEFAULT_RETRY.with_timeout(LIST_DEADLINE_S)
        self._get_retry = DEFAULT_RETRY.with_timeout(GET_DEADLINE_S)
        self._storage: Any = storage
        self._client: Any = None
        self._client_lock = threading.Lock()

    def _bucket(self) -> Any:
        """The bucket handle; the client is made on first use, so that credentials that were
        not there yet (the metadata server starting) are looked for again."""
        with self._client_lock:
            if self._client is None:
                try:
                    self._client = self._storage.Client()
                except Exception as exc:
                    raise self._failure("authenticate", exc) from None
            return self._client.bucket(self._bucket_name)

    def list(self, prefix: str) -> list[ObjectInfo]:
        bucket = self._bucket()
        try:
            blobs = bucket.list_blobs(prefix=prefix, retry=self._list_retry, timeout=TIMEOUT_S)
            return [
                ObjectInfo(b.name, int(b.size or 0), f"{b.generation}#{b.crc32c or ''}")
                for b in blobs
            ]
        except Exception as exc:
            raise self._failure("list", exc) from None

    def download(self, obj: ObjectInfo, path: str, stop: threading.Event) -> int:
        bucket = self._bucket()
        generation, _, crc32c = obj.tag.partition("#")
        blob = bucket.blob(obj.key, generation=int(generation))
        crc = [0]
        try:
            with blob.open("rb", retry=self._get_retry, timeout=TIMEOUT_S) as stream:

                def read(size: int) -> bytes:
                    data: bytes = stream.read(size)
                    crc[0] = google_crc32c.extend(crc[0], data)
                    return data

                written = write_stream(read, path, stop, self.where)
        except StoreError:
            raise
        except Exception as exc:
            kind, reason = classify(exc)
            if kind == "not_found":  # that generation is gone: replaced since the listing
                kind = "changed"
            raise StoreError(kind, self.where, "get", reason) from None
        if crc32c and base64.b64encode(crc[0].to_bytes(4, "big")).decode() != crc32c:
            reason = f"{obj.key} does not match the CRC32C the listing showed (replaced since?)"
            raise StoreError("changed", self.where, "get", reason)
        return written

    def read(self, key: str) -> bytes:
        bucket = self._bucket()
        try:
            data: bytes = bucket.blob(key).download_as_bytes(
                retry=self._get_retry, timeout=TIMEOUT_S
            )
            return data
        except Exception as exc:
            raise self._failure("get", exc) from None

    def _failure(self, operation: str, exc: Exception) -> StoreError:
        kind, reason = classify(exc)
        if operation == "list" and kind == "not_found":
            kind = "no_bucket"
        return StoreError(kind, self.where, operation, reason)


def classify(exc: Exception) -> tuple[FailureKind, str]:
    """A google-cloud exception's kind and a reason that quotes no request."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    if isinstance(exc, auth.DefaultCredentialsError):
        return "denied", "no Google credentials found (GOOGLE_APPLICATION_CREDENTIALS, metadata)"
    if isinstance(exc, auth.RefreshError | auth.GoogleAuthError):
        return "denied", "the Google credentials were refused or could not be refreshed"
    if isinstance(exc, api.GoogleAPICallError):
        status = int(exc.code or 0)
        reason = f"{type(exc).__name__} (HTTP {status})"
        if isinstance(exc, api.NotFound):
            return "not_found", reason
        if status in (401, 403):
            return "denied", reason
        if status == 412:
            return "changed", reason
        return "unreachable", reason
    return "unreachable", f"{type(exc).__name__} (the store could not be reached)"
