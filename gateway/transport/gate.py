"""The gRPC front door: what every RPC goes through before its servicer runs.

:meth:`Gate.wrap` wraps each method handler where it is registered
(:func:`gateway.transport.grpc_services.register`, which also says where the gate sits in the
chain), so the checks cost one coroutine frame per call and no interceptor. In order:

1. **Undecodable messages** never reach a servicer: the request deserializer catches the parse
   error, and the call ends with INVALID_ARGUMENT (grpc.aio on its own answers UNKNOWN and logs
   a full traceback per message). The log says so at most once a minute, with a count, never
   the bytes.
2. **Authentication** (``--auth_token_file``): a bearer token in the ``authorization`` metadata,
   unless the method is open (:mod:`gateway.transport.auth`); else UNAUTHENTICATED.
3. **Draining** (:meth:`Gate.start_draining`, on SIGTERM): every new call except grpc.health.v1's
   is refused with UNAVAILABLE while the listeners stay open, so clients retry elsewhere; calls
   already running finish (:meth:`Gate.wait_idle`). In the drain's last moment the refusals are
   held until the server's shutdown has begun (:meth:`Gate.hold_refusals`).
4. **CallAdmission**: at most ``max_concurrent`` unary calls of the bounded services (those a
   protocol marks so: TF Serving's PredictionService) run at once; the next one is refused at once
   with UNAVAILABLE "retry later" instead of queueing inside grpc.aio until its deadline. 0: no
   bound.

Only unary calls count as in flight: streams (health ``Watch``) may last as long as a connection.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from time import monotonic
from typing import Any

import grpc

from gateway.errors import Code, ServingError, grpc_status
from gateway.serving.budget import MemoryBudget
from gateway.transport.auth import BearerTokens
from gateway.transport.call_admission import CallAdmission
from gateway.transport.grpc_errors import status_of
from gateway.transport.quiet_log import Throttled

log = logging.getLogger(__name__)

HEALTH_SERVICE = "grpc.health.v1.Health"
HELD_ANSWER_BYTES = 64 * 1024
"""Answers from this size on count against the in-flight budget until their call ends (smaller
ones are bounded by the streams a connection may open and the connections)."""
HELD_ANSWER_COPIES = 2
"""How many times an unsent answer's bytes are held until sent: the serialized message and
grpc's own copy of it (a bare grpc.aio server holds 8 MiB per unread 4 MiB answer)."""
AUTHORIZATION = "authorization"

MethodHandler = Any
"""A ``grpc.RpcMethodHandler`` (a named tuple; grpc ships no type for it)."""


@dataclass(frozen=True)
class Undecodable:
    """Stands, in place of a request, for bytes that did not parse as ``message``."""

    message: str


def _message_name(deserializer: Callable[[bytes], Any]) -> str:
    descriptor = getattr(getattr(deserializer, "__self__", None), "DESCRIPTOR", None)
    return str(getattr(descriptor, "full_name", "request"))


def _guarded(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None
    name = _message_name(deserializer)

    def decode(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:
            return Undecodable(name)

    return decode


class Gate(CallAdmission):
    """The checks above for one gRPC server; counters are for tests and metrics."""

    def __init__(
        self,
        *,
        auth: BearerTokens | None = None,
        max_concurrent: int = 0,
        budget: MemoryBudget | None = None,
    ) -> None:
        super().__init__(max_concurrent)
        self.auth = auth
        self.budget = budget
        """The in-flight bytes (``--max_inflight_bytes``) a large answer counts against until its
        call ends (None: unbounded)."""
        self._undecodable = Throttled(log, "undecodable gRPC requests answered INVALID_ARGUMENT")
        self._unauthenticated = Throttled(log, "gRPC calls refused without a valid token")
        self._held: asyncio.Event | None = None

    # -- the drain's last step (gateway.drain.shut_down) ----------------------------------------
    def hold_refusals(self) -> None:
        """From now on a call refused for draining gets its UNAVAILABLE only at
        :meth:`release_refusals` (a client waiting for it sends nothing more meanwhile)."""
        if self._held is None:
            self._held = asyncio.Event()

    def release_refusals(self) -> None:
        """Answer the held refusals (once the server's shutdown has begun)."""
        if self._held is not None:
            self._held.set()

    async def refusal_due(self) -> None:
        """Return when a refused call may get its answer: at once, unless held."""
        if self._held is not None and self.draining:
            await self._held.wait()

    # -- the wrapper -----------------------------------------------------------------------------
    def wrap(
        self, service: str, method: str, handler: MethodHandler, *, bounded: bool
    ) -> MethodHandler:
        """``handler`` with its deserializer guarded and its behaviour behind the checks
        (``bounded``: its unary calls count against ``max_concurrent``)."""
        path = f"/{service}/{method}"
        health = service == HEALTH_SERVICE
        open_path = self.auth is None or self.auth.is_open(path)
        counted = not (handler.request_streaming or handler.response_streaming or health)
        limited = counted and bounded and self.max_concurrent > 0
        check = functools.partial(self._check, path, open_path, health, limited)
        kind = _kind(handler)
        behaviour = getattr(handler, kind)
        replaced = _wrap_behaviour(
            behaviour,
            check,
            counted,
            self,
            path,
            streaming_in=handler.request_streaming,
            plain=open_path and not health,
            bound=self.max_concurrent if limited else 0,
        )
        return handler._replace(
            request_deserializer=_guarded(handler.request_deserializer), **{kind: replaced}
        )

    def hold_answer(self, answer: bytes, context: Any) -> None:
        """Count a large ``answer`` against the in-flight budget until its call ends (a client
        that never reads cannot make unsent answers pile up past the budget);
        RESOURCE_EXHAUSTED when it does not fit."""
        budget = self.budget
        if budget is None:
            return
        nbytes = HELD_ANSWER_COPIES * len(answer)
        budget.reserve(nbytes)  # raises the budget's own refusal
        context.add_done_callback(lambda _context: budget.release(nbytes))

    # -- the checks -------------------------------------------------------------------------------
    def _check(
        self, path: str, open_path: bool, health: bool, limited: bool, context: Any
    ) -> ServingError | None:
        if not open_path:
            assert self.auth is not None
            metadata = context.invocation_metadata() or ()
            value = next((v for k, v in metadata if k == AUTHORIZATION), None)
            try:
                self.auth.check(value if isinstance(value, str) or value is None else None)
            except ServingError as exc:
                self._unauthenticated(path)
                return exc
        if health:
            return None
        return self.refusal(bounded=limited)

    def undecodable(self, request: Undecodable, path: str) -> ServingError:
        self._undecodable(f"{path} (not a valid {request.message})")
        return ServingError(
            f"the request is not a valid {request.message} message", Code.INVALID_ARGUMENT
        )


def _kind(handler: MethodHandler) -> str:
    request = "stream" if handler.request_streaming else "unary"
    response = "stream" if handler.response_streaming else "unary"
    return f"{request}_{response}"


Check = Callable[[Any], ServingError | None]


def _wrap_behaviour(
    behaviour: Callable[..., Any],
    check: Check,
    counted: bool,
    gate: Gate,
    path: str,
    *,
    streaming_in: bool,
    plain: bool,
    bound: int,
) -> Callable[..., Any]:
    """The same kind of callable (coroutine function or async generator function) as
    ``behaviour``, running the checks first; grpc.aio dispatches on that kind. A unary answer's
    failure is the call's status by the error rule (:func:`~gateway.transport.grpc_errors.
    status_of`). ``plain``: no token is asked for, so only draining and the ``bound`` on calls in
    flight (0: none) can refuse the call: checked here without a call when neither does."""

    def refused(request: Any, context: Any) -> ServingError | None:
        refusal = check(context)
        if refusal is None and type(request) is Undecodable:
            refusal = gate.undecodable(request, path)
        return refusal

    async def deny(refusal: ServingError, context: Any) -> None:
        await gate.refusal_due()  # held while the drain's shutdown has begun
        await context.abort(grpc_status(refusal.code), refusal.message)

    async def admit(request: Any, context: Any) -> Any:
        refusal = refused(request, context)
        if refusal is not None:
            await deny(refusal, context)
        return _checked_stream(request, context, gate, path) if streaming_in else request

    if inspect.isasyncgenfunction(behaviour):

        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            request = await admit(request, context)
            async for item in behaviour(request, context):
                yield item

        return stream

    async def call(request: Any, context: Any) -> Any:
        if (
            plain
            and not gate.draining
            and (not bound or gate.in_flight < bound)
            and type(request) is not Undecodable
        ):
            gate.last_arrival = monotonic()
        else:
            refusal = refused(request, context)
            if refusal is not None:
                request = None  # the abort's traceback keeps this frame (see below)
                await deny(refusal, context)
        if streaming_in:
            request = _checked_stream(request, context, gate, path)
        if counted:
            gate.in_flight += 1
        try:
            answer = await behaviour(request, context)
            if type(answer) is bytes and len(answer) >= HELD_ANSWER_BYTES and gate.budget:
                gate.hold_answer(answer, context)
            return answer
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            failure = status_of(exc, path)
        finally:
            if counted:
                gate.leave()
        # Abort outside the except block: grpc keeps the abort exception, and chained to the
        # failure its traceback would hold the request's frames (and decoded tensors). Its own
        # traceback holds this frame, in a cycle through the context that only a full garbage
        # collection breaks: the request and a refused answer are let go first.
        request = answer = None
        await context.abort(*failure)
        raise AssertionError("unreachable: context.abort raises")

    return call


async def _checked_stream(requests: Any, context: Any, gate: Gate, path: str) -> AsyncIterator[Any]:
    async for item in requests:
        if type(item) is Undecodable:
            refusal = gate.undecodable(item, path)
            await context.abort(grpc_status(refusal.code), refusal.message)
        yield item
