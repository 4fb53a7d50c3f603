"""What goes wrong with an object store, said once: which bucket, which operation, why.

Every store turns its SDK's exceptions into a :class:`StoreError` (:mod:`~gateway.storage.s3`,
:mod:`~gateway.storage.gcs`, :mod:`~gateway.storage.azure_blob`). Its text names the bucket,
the operation and the store's own reason (an error code such as ``AccessDenied``, or the
network's), never a credential, a signed URL or a request header: the SDKs' exception texts are
not quoted whole. :meth:`StoreError.serving` maps it to the one error model.
"""

from __future__ import annotations

from typing import Literal

from gateway.errors import Code, ServingError

FailureKind = Literal["unreachable", "denied", "no_bucket", "not_found", "changed"]
"""``unreachable``: network, timeouts, 5xx, throttling — worth retrying as it is;
``denied``: credentials missing, refused or expired; ``no_bucket``: the bucket (container)
does not exist; ``not_found``: the object does not; ``changed``: the object is not the one the
listing showed (size or tag), it was replaced meanwhile."""

_CODES: dict[FailureKind, Code] = {
    "unreachable": Code.UNAVAILABLE,
    "denied": Code.PERMISSION_DENIED,
    "no_bucket": Code.NOT_FOUND,
    "not_found": Code.NOT_FOUND,
    "changed": Code.ABORTED,
}


class StoreError(Exception):
    """An operation on ``store`` (a bucket as a URL) failed for ``reason``."""

    def __init__(self, kind: FailureKind, store: str, operation: str, reason: str) -> None:
        self.kind: FailureKind = kind
        self.store = store
        self.operation = operation
        self.reason = reason
        super().__init__(f"{operation} on {store} failed: {reason}")

    def serving(self) -> ServingError:
        """The same failure in the one error model (UNAVAILABLE, PERMISSION_DENIED, ...)."""
        return ServingError(str(self), _CODES[self.kind])


class ExtraMissing(ServingError):
    """A URL needs a store client that is not installed."""

    def __init__(self, scheme: str, module: str) -> None:
        super().__init__(
            f"{scheme}:// model repositories need the client library {module}: install "
            "tensorgate with its [storage] extra (pip install 'tensorgate[storage]')",
            Code.FAILED_PRECONDITION,
        )
