"""The gRPC methods' error rule, for every protocol: a :class:`~gateway.errors.ServingError`
aborts the call with its canonical code as the gRPC status; anything else is logged and aborts it
as INTERNAL."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc

from gateway.errors import Internal, ServingError, grpc_status

log = logging.getLogger(__name__)

Req = TypeVar("Req")
Resp = TypeVar("Resp")
ServicerMethod = Callable[[Any, Req, grpc.aio.ServicerContext], Awaitable[Resp]]


def rpc(method: ServicerMethod[Req, Resp]) -> ServicerMethod[Req, Resp]:
    """Wrap a servicer method: map ServingError (and unexpected exceptions) to a gRPC status on
    the context."""

    @functools.wraps(method)
    async def wrapper(self: Any, request: Req, context: grpc.aio.ServicerContext) -> Resp:
        try:
            return await method(self, request, context)
        except ServingError as exc:
            error = exc
        except Exception as exc:
            log.exception("%s failed", method.__name__)
            error = Internal(f"{type(exc).__name__}: {exc}")
        # Abort outside the except block: grpc keeps the abort exception, and chained to the
        # error its traceback would hold the request's frames (and decoded tensors) in a cycle.
        code, message = grpc_status(error.code), error.message
        del error
        await context.abort(code, message)
        raise AssertionError("unreachable: context.abort raises")

    return wrapper
