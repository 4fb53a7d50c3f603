"""Azure Blob Storage through azure-storage-blob, configured only by Azure's standard
environment, first found wins:

1. ``AZURE_STORAGE_CONNECTION_STRING`` (account and key, or a SAS, and the endpoint: Azurite's
   connection string works as it is);
2. an account (``AZURE_STORAGE_ACCOUNT_NAME`` or ``AZURE_STORAGE_ACCOUNT``, or the account of an
   ``az://account/container/...`` URL) with ``AZURE_STORAGE_KEY`` / ``AZURE_STORAGE_ACCOUNT_KEY``
   (a shared key) or ``AZURE_STORAGE_SAS_TOKEN``;
3. the account with azure-identity's ``DefaultAzureCredential``: a service principal's
   ``AZURE_CLIENT_ID`` / ``AZURE_TENANT_ID`` / ``AZURE_CLIENT_SECRET``, AKS workload identity
   (``AZURE_FEDERATED_TOKEN_FILE``), or the managed identity.

The blob endpoint is ``AZURE_STORAGE_BLOB_ENDPOINT`` when set (an emulator, a sovereign cloud),
else ``https://<account>.blob.core.windows.net``. A version is taken at the ETag the listing
showed.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gateway.storage.failures import ExtraMissing, FailureKind, StoreError
from gateway.storage.objects import ObjectInfo, write_stream
from gateway.storage.urls import ObjectUrl, azure_account

CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 30
RETRIES = 2
BACKOFF_S = 1
"""Retries of one request and the first wait (the SDK's exponential back-off with jitter; its
defaults wait 15 s and more, too long for a poll)."""


class AzureStore:
    """One Azure Blob container."""

    def __init__(self, url: ObjectUrl, env: Mapping[str, str]) -> None:
        try:
            from azure.storage.blob import BlobServiceClient, ExponentialRetry
        except ImportError:
            raise ExtraMissing("az", "azure-storage-blob") from None
        self.where = url.store
        retry = ExponentialRetry(
            initial_backoff=BACKOFF_S, increment_base=2, retry_total=RETRIES, random_jitter_range=1
        )
        options: dict[str, Any] = {
            "retry_policy": retry,
            "connection_timeout": CONNECT_TIMEOUT_S,
            "read_timeout": READ_TIMEOUT_S,
        }
        connection = env.get("AZURE_STORAGE_CONNECTION_STRING", "")
        account = url.account or azure_account(env)
        if connection and (not url.account or url.account == azure_account(env)):
            service = BlobServiceClient.from_connection_string(connection, **options)
        elif account:
            endpoint = env.get("AZURE_STORAGE_BLOB_ENDPOINT") or (
                f"https://{account}.blob.core.windows.net"
            )
            service = BlobServiceClient(endpoint, credential=_credential(env, account), **options)
        else:
            raise StoreError(
                "denied",
                self.where,
                "authenticate",
                "no Azure storage account configured (AZURE_STORAGE_CONNECTION_STRING, "
                "AZURE_STORAGE_ACCOUNT_NAME or an az://account/container URL)",
            )
        self._container: Any = service.get_container_client(url.bucket)

    def list(self, prefix: str) -> list[ObjectInfo]:
        try:
            return [
                ObjectInfo(b.name, int(b.size), str(b.etag).strip('"'))
                for b in self._container.list_blobs(name_starts_with=prefix)
            ]
        except Exception as exc:
            raise self._failure("list", exc) from None

    def download(self, obj: ObjectInfo, path: str, stop: threading.Event) -> int:
        from azure.core import MatchConditions

        try:
            stream = self._container.download_blob(
                obj.key, etag=f'"{obj.tag}"', match_condition=MatchConditions.IfNotModified
            )
            chunks = iter(stream.chunks())
            pending = bytearray()

            def read(size: int) -> bytes:
                while len(pending) < size:
                    chunk = next(chunks, b"")
                    if not chunk:
                        break
                    pending.extend(chunk)
                out = bytes(pending[:size])
                del pending[:size]
                return out

            return write_stream(read, path, stop, self.where)
        except StoreError:
            raise
        except Exception as exc:
            raise self._failure("get", exc) from None

    def read(self, key: str) -> bytes:
        try:
            data: bytes = self._container.download_blob(key).readall()
            return data
        except Exception as exc:
            raise self._failure("get", exc) from None

    def _failure(self, operation: str, exc: Exception) -> StoreError:
        kind, reason = classify(exc)
        return StoreError(kind, self.where, operation, reason)


def _credential(env: Mapping[str, str], account: str) -> Any:
    """The account's credential from the environment (see the module doc)."""
    key = env.get("AZURE_STORAGE_KEY") or env.get("AZURE_STORAGE_ACCOUNT_KEY")
    if key:
        return {"account_name": account, "account_key": key}
    sas = env.get("AZURE_STORAGE_SAS_TOKEN")
    if sas:
        return sas
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        raise ExtraMissing("az", "azure-identity") from None
    return DefaultAzureCredential()


def classify(exc: Exception) -> tuple[FailureKind, str]:
    """An azure-core exception's kind and a reason that quotes no request (the service's error
    code)."""
    from azure.core import exceptions as az

    if isinstance(exc, az.ClientAuthenticationError):
        return "denied", f"{_code(exc)} (HTTP {exc.status_code})"
    if isinstance(exc, az.ResourceNotFoundError):
        code = _code(exc)
        return ("no_bucket" if code == "ContainerNotFound" else "not_found"), f"{code} (HTTP 404)"
    if isinstance(exc, az.ResourceModifiedError):
        return "changed", f"{_code(exc)} (HTTP {exc.status_code})"
    if isinstance(exc, az.HttpResponseError) and exc.status_code is not None:
        status = int(exc.status_code)
        reason = f"{_code(exc)} (HTTP {status})"
        if status in (401, 403):
            return "denied", reason
        if status == 412:
            return "changed", reason
        return "unreachable", reason
    if type(exc).__name__ == "CredentialUnavailableError":
        return "denied", "no Azure credential found (connection string, key, identity)"
    return "unreachable", f"{type(exc).__name__} (the store could not be reached)"


def _code(exc: Any) -> str:
    """The service's error code (``AuthorizationFailure``), else the exception's class."""
    code = getattr(exc, "error_code", None)
    return str(getattr(code, "value", code) or type(exc).__name__)
