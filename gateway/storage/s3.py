"""Amazon S3 and S3-compatible stores (MinIO, Ceph, moto) through boto3, configured only by the
AWS SDKs' standard environment.

boto3 reads the credentials (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``; web identity for IRSA: ``AWS_WEB_IDENTITY_TOKEN_FILE`` + ``AWS_ROLE_ARN``;
the shared config and credentials files with ``AWS_PROFILE``; the container and instance
metadata), the region (``AWS_REGION``, ``AWS_DEFAULT_REGION``) and the endpoint
(``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``) itself. TensorFlow's old S3 file system
variables are honoured when no AWS endpoint variable is set: ``S3_ENDPOINT`` (host[:port] or a
URL), ``S3_USE_HTTPS`` (``0``: http) and ``S3_VERIFY_SSL`` (``0``: no certificate check), with
path-style addressing as TensorFlow used with a custom endpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gateway.storage.failures import ExtraMissing, FailureKind, StoreError
from gateway.storage.objects import ObjectInfo, write_stream
from gateway.storage.urls import ObjectUrl

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 30.0
ATTEMPTS = 3
"""Tries of one request (boto3's standard retry mode: exponential back-off with jitter)."""

_DENIED = {
    "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
    "InvalidToken", "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem",
}  # fmt: skip
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}


def legacy_endpoint(env: Mapping[str, str]) -> tuple[str | None, bool]:
    """TensorFlow's ``S3_ENDPOINT`` / ``S3_USE_HTTPS`` / ``S3_VERIFY_SSL`` as (endpoint URL or
    None, verify certificates); None when an AWS endpoint variable is set (boto3 reads those)."""
    verify = env.get("S3_VERIFY_SSL", "1") != "0"
    endpoint = env.get("S3_ENDPOINT", "")
    if not endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL"):
        return None, verify
    if "://" not in endpoint:
        scheme = "http" if env.get("S3_USE_HTTPS", "1") == "0" else "https"
        endpoint = f"{scheme}://{endpoint}"
    return endpoint, verify


class S3Store:
    """One S3 bucket."""

    def __init__(self, url: ObjectUrl, env: Mapping[str, str]) -> None:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise ExtraMissing("s3", "boto3") from None
        self.bucket = url.bucket
        self.where = url.store
        endpoint, verify = legacy_endpoint(env)
        config = Config(
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=READ_TIMEOUT_S,
            retries={"mode": "standard", "max_attempts": ATTEMPTS},
            max_pool_connections=32,
            s3={"addressing_style": "path"} if endpoint else None,
        )
        session = boto3.session.Session()
        self._client: Any = session.client(
            "s3", endpoint_url=endpoint, verify=verify, config=config
        )

    def list(self, prefix: str) -> list[ObjectInfo]:
        found = []
        try:
            pages = self._client.get_paginator("list_objects_v2")
            for page in pages.paginate(Bucket=self.bucket, Prefix=prefix):
                for item in page.get("Contents", ()):
                    tag = str(item.get("ETag", "")).strip('"')
                    found.append(ObjectInfo(str(item["Key"]), int(item["Size"]), tag))
        except Exception as exc:
            raise self._failure("list", exc) from None
        return found

    def download(self, obj: ObjectInfo, path: str, stop: threading.Event) -> int:
        try:
            answer = self._client.get_object(Bucket=self.bucket, Key=obj.key, IfMatch=obj.tag)
            body = answer["Body"]
            try:
                return write_stream(body.read, path, stop, self.where)
            finally:
                body.close()
        except StoreError:
            raise
        except Exception as exc:
            raise self._failure("get", exc) from None

    def read(self, key: str) -> bytes:
        try:
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                data: bytes = body.read()
            finally:
                body.close()
            return data
        except Exception as exc:
            raise self._failure("get", exc) from None

    def _failure(self, operation: str, exc: Exception) -> StoreError:
        kind, reason = classify(exc)
        return StoreError(kind, self.where, operation, reason)


def classify(exc: Exception) -> tuple[FailureKind, str]:
    """A botocore exception's kind and a reason that quotes no request (the error code, or the
    exception's class for the network's failures)."""
    from botocore.exceptions import (
        ClientError,
        CredentialRetrievalError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        reason = f"{code or 'HTTP ' + str(status)} (HTTP {status})"
        if code == "NoSuchBucket":
            return "no_bucket", reason
        if code in _DENIED or status in (401, 403):
            return "denied", reason
        if code in _NOT_FOUND or status == 404:
            return "not_found", reason
        if code == "PreconditionFailed" or status == 412:
            return "changed", reason
        return "unreachable", reason
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return "denied", "no AWS credentials found in the environment, profile or metadata"
    if isinstance(exc, CredentialRetrievalError):
        return "denied", "the AWS credentials could not be retrieved"
    return "unreachable", f"{type(exc).__name__} (the store could not be reached)"
