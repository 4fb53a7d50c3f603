"""The one error model: canonical codes, the exception hierarchy, and their gRPC / HTTP mapping.

Every failure a client can see is a :class:`ServingError` carrying a canonical :class:`Code` and a
message. Adapters map it once: :func:`grpc_status` for gRPC, :func:`http_status` for REST
(TF Serving's table). Errors cross the worker boundary as plain data (``code`` name + message),
turned back into exceptions by :func:`from_wire`.
"""

from __future__ import annotations

import enum

import grpc

MAX_MESSAGE_CHARS = 1024
"""Messages longer than this are cut and end with ``...TRUNCATED`` (as TF Serving does)."""

TRUNCATED_SUFFIX = "...TRUNCATED"


class Code(enum.IntEnum):
    """Canonical status codes (numbering of ``google.rpc.Code`` / ``tensorflow.error.Code``)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


_HTTP = {
    Code.OK: 200,
    Code.CANCELLED: 499,
    Code.UNKNOWN: 500,
    Code.INVALID_ARGUMENT: 400,
    Code.DEADLINE_EXCEEDED: 504,
    Code.NOT_FOUND: 404,
    Code.ALREADY_EXISTS: 409,
    Code.PERMISSION_DENIED: 403,
    Code.RESOURCE_EXHAUSTED: 429,
    Code.FAILED_PRECONDITION: 400,
    Code.ABORTED: 409,
    Code.OUT_OF_RANGE: 400,
    Code.UNIMPLEMENTED: 501,
    Code.INTERNAL: 500,
    Code.UNAVAILABLE: 503,
    Code.DATA_LOSS: 500,
    Code.UNAUTHENTICATED: 401,
}

_GRPC = {status.value[0]: status for status in grpc.StatusCode}


def truncate(message: str) -> str:
    """Cut ``message`` to :data:`MAX_MESSAGE_CHARS` characters, marking the cut."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return message[: MAX_MESSAGE_CHARS - len(TRUNCATED_SUFFIX)] + TRUNCATED_SUFFIX


class ServingError(Exception):
    """A failure with a canonical code; ``message`` is already truncated for clients."""

    code: Code = Code.UNKNOWN

    def __init__(self, message: str, code: Code | None = None) -> None:
        if code is not None:
            self.code = code
        self.message = truncate(message)
        super().__init__(self.message)

    def to_wire(self) -> dict[str, str]:
        """Plain data for crossing a process boundary."""
        return {"code": self.code.name, "message": self.message}


class InvalidArgument(ServingError):
    code = Code.INVALID_ARGUMENT


class NotFound(ServingError):
    code = Code.NOT_FOUND


class FailedPrecondition(ServingError):
    code = Code.FAILED_PRECONDITION


class ResourceExhausted(ServingError):
    code = Code.RESOURCE_EXHAUSTED


class InputAreaFull(ResourceExhausted):
    """No room for a batch's inputs where it would run, now; there would be once the runs in
    flight there are done (``needed`` bytes, no more than the whole room): the sender may wait
    for room and try again."""

    def __init__(self, message: str, needed: int) -> None:
        super().__init__(message)
        self.needed = needed


class InputTooLarge(ResourceExhausted):
    """A batch whose inputs need more room than there is at all where it would run: it can
    never be placed whole (several requests may go as smaller batches)."""


class Unavailable(ServingError):
    code = Code.UNAVAILABLE


class DeadlineExceeded(ServingError):
    code = Code.DEADLINE_EXCEEDED


class Cancelled(ServingError):
    code = Code.CANCELLED


class Unimplemented(ServingError):
    code = Code.UNIMPLEMENTED


class Internal(ServingError):
    code = Code.INTERNAL


class Unauthenticated(ServingError):
    code = Code.UNAUTHENTICATED


class PermissionDenied(ServingError):
    """The caller is known but may not do this (a serving token asking to change the models)."""

    code = Code.PERMISSION_DENIED


_BY_CODE: dict[Code, type[ServingError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        NotFound,
        FailedPrecondition,
        ResourceExhausted,
        Unavailable,
        DeadlineExceeded,
        Cancelled,
        Unimplemented,
        Internal,
        Unauthenticated,
        PermissionDenied,
    )
}


def from_wire(code: str, message: str) -> ServingError:
    """Rebuild an error sent as plain data; an unknown code name becomes INTERNAL."""
    try:
        canonical = Code[code]
    except KeyError:
        return Internal(f"{code}: {message}")
    cls = _BY_CODE.get(canonical, ServingError)
    return cls(message, canonical)


def servable_not_found(
    model: str, version: int | None = None, label: str | None = None
) -> NotFound:
    """TF Serving's text, which clients match on: ``Servable not found for request: ...``."""
    if label is not None:
        request = f"Specific({model}, label {label})"
    elif version is not None:
        request = f"Specific({model}, {version})"
    else:
        request = f"Latest({model})"
    return NotFound(f"Servable not found for request: {request}")


def grpc_status(code: Code) -> grpc.StatusCode:
    """The gRPC status for a canonical code."""
    return _GRPC[int(code)]


def http_status(code: Code) -> int:
    """The HTTP status TF Serving's REST API uses for a canonical code."""
    return _HTTP[code]
