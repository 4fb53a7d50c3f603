"""Object URLs: ``s3://bucket/prefix``, ``gs://bucket/prefix``, ``az://container/prefix``.

Azure also takes TensorFlow I/O's form ``az://account/container/prefix``: the first segment is
read as the storage account when it names the account the environment configures
(``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT`` or the connection string's
``AccountName``), and as the container otherwise. A key never starts or ends with ``/``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

SCHEMES = ("s3", "gs", "az")
"""The schemes read: Amazon S3 (and S3-compatible stores), Google Cloud Storage, Azure Blob."""


class UrlError(ValueError):
    """A string that looks like an object URL but is not one this gateway reads."""


@dataclass(frozen=True)
class ObjectUrl:
    """A place in a bucket: ``scheme``, ``bucket`` (Azure: the container), ``key`` ("" for the
    bucket's root) and, for Azure's account form, ``account``."""

    scheme: str
    bucket: str
    key: str = ""
    account: str = ""

    def __str__(self) -> str:
        head = f"{self.scheme}://{self.account + '/' if self.account else ''}{self.bucket}"
        return f"{head}/{self.key}" if self.key else head

    def child(self, *parts: str) -> ObjectUrl:
        """The URL below this one by ``parts`` (each without slashes at its ends)."""
        key = "/".join(p for p in (self.key, *parts) if p)
        return ObjectUrl(self.scheme, self.bucket, key, self.account)

    @property
    def store(self) -> str:
        """The bucket as a URL (what errors name: never a key or a credential)."""
        return str(ObjectUrl(self.scheme, self.bucket, "", self.account))


def is_url(path: str) -> bool:
    """True for anything with a scheme (``x://``): an object URL or an unsupported one."""
    return "://" in path


def parse_url(url: str, env: Mapping[str, str] | None = None) -> ObjectUrl:
    """``url`` as an :class:`ObjectUrl`; UrlError naming the problem (an unknown scheme, no
    bucket, ``..`` or empty segments). ``env``: where Azure's account is configured
    (``os.environ`` by default)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in SCHEMES:
        schemes = ", ".join(f"{s}://" for s in SCHEMES)
        raise UrlError(f"{url} is not an object URL tensorgate reads ({schemes})")
    parts = rest.rstrip("/").split("/") if rest.rstrip("/") else []
    if not parts or not parts[0]:
        raise UrlError(f"{url} names no bucket")
    if any(p in ("", ".", "..") for p in parts):
        raise UrlError(f"{url} has an empty, '.' or '..' segment")
    account = ""
    if scheme == "az" and len(parts) > 1 and parts[0] == azure_account(env):
        account, parts = parts[0], parts[1:]
    return ObjectUrl(scheme, parts[0], "/".join(parts[1:]), account)


def azure_account(env: Mapping[str, str] | None = None) -> str:
    """The storage account the environment names ("" when none)."""
    env = os.environ if env is None else env
    for name in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"):
        if env.get(name):
            return env[name]
    return connection_string(env).get("AccountName", "")


def connection_string(env: Mapping[str, str]) -> dict[str, str]:
    """``AZURE_STORAGE_CONNECTION_STRING`` as its ``Name=value`` pairs (empty when unset)."""
    pairs = {}
    for item in env.get("AZURE_STORAGE_CONNECTION_STRING", "").split(";"):
        name, sep, value = item.partition("=")
        if sep:
            pairs[name.strip()] = value.strip()
    return pairs
