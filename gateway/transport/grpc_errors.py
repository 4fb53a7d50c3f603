"""The gRPC methods' error rule, for every protocol: a :class:`~gateway.errors.ServingError`
ends the call with its canonical code as the gRPC status; anything else is logged and ends it as
INTERNAL. The gate's one wrapper of each method applies it (:mod:`gateway.transport.gate`)."""

from __future__ import annotations

import logging

import grpc

from gateway.errors import Internal, ServingError, grpc_status

log = logging.getLogger(__name__)


def status_of(exc: Exception, path: str) -> tuple[grpc.StatusCode, str]:
    """The status a call of method ``path`` ends with when its servicer raised ``exc``: a
    ServingError's own code and message, else INTERNAL (logged with its traceback)."""
    if isinstance(exc, ServingError):
        return grpc_status(exc.code), exc.message
    log.exception("%s failed", path)
    error = Internal(f"{type(exc).__name__}: {exc}")
    return grpc_status(error.code), error.message
