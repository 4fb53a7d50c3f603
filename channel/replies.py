"""The replies, worker → gateway: one typed message per outcome, its constructor, and the
worker's failures (:class:`WorkerError`), which become :class:`ErrorReply` values.

Every reply repeats its request's id; a started worker first posts :func:`ready` (id
:data:`READY_ID`). Replies are JSON objects with ``"id"`` and ``"ok"``, but for a successful run:
a :class:`RunReply`, a named tuple that only the binary layout of :mod:`channel.wire` carries. A
failed ``run`` (an :class:`ErrorReply`) also carries ``"out_end"``, so its output space is
released like a successful run's. What each request gets back is listed in :mod:`channel.messages`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, NamedTuple, NotRequired, TypedDict

from channel.descriptors import TensorDesc
from channel.span_wire import WorkerSpans
from channel.telemetry import WorkerStats

READY_ID: Final = 0
"""The id of the ``ready`` message; requests are numbered from 1."""


class Ready(TypedDict):
    id: int
    ok: Literal[True]
    op: Literal["ready"]
    pid: int


class OkReply(TypedDict):
    """The reply to ``unload`` and ``stop``."""

    id: int
    ok: Literal[True]


class LoadReply(TypedDict):
    id: int
    ok: Literal[True]
    signature: dict[str, Any]
    """A :class:`~channel.descriptors.WireSignature` (ONNX) or ``{"signatures": {name: ...}}``
    (TensorFlow)."""


class RunReply(NamedTuple):
    """A run that succeeded: its ``outputs`` in the output area, the end of its output range
    (``out_end``: releasing it frees this run's output space and that of every earlier run), how
    long the model ran (µs) and, for a traced run, the worker's spans (else None)."""

    id: int
    outputs: tuple[TensorDesc, ...]
    out_end: int
    compute_us: float
    spans: WorkerSpans | None


class PingReply(TypedDict):
    id: int
    ok: Literal[True]
    pid: int
    runs: NotRequired[int]
    stats: NotRequired[WorkerStats]


class ErrorReply(TypedDict):
    id: int
    ok: Literal[False]
    code: str
    """A canonical status name such as ``"INVALID_ARGUMENT"``."""
    message: str
    out_end: NotRequired[int]
    """On a failed run: releasing it frees this run's output space and all earlier runs'."""


Reply = Ready | OkReply | LoadReply | RunReply | PingReply | ErrorReply


def ready(pid: int) -> Ready:
    return {"id": READY_ID, "ok": True, "op": "ready", "pid": pid}


def ok_reply(request_id: int) -> OkReply:
    return {"id": request_id, "ok": True}


def load_reply(request_id: int, signature: Mapping[str, Any]) -> LoadReply:
    return {"id": request_id, "ok": True, "signature": dict(signature)}


def run_reply(
    request_id: int,
    *,
    outputs: Sequence[TensorDesc],
    out_end: int,
    compute_us: float,
    spans: WorkerSpans | None = None,
) -> RunReply:
    """``spans`` None: an untraced run."""
    return RunReply(request_id, tuple(outputs), out_end, compute_us, spans)


def ping_reply(
    request_id: int, pid: int, *, runs: int | None = None, stats: WorkerStats | None = None
) -> PingReply:
    reply: PingReply = {"id": request_id, "ok": True, "pid": pid}
    if runs is not None:
        reply["runs"] = runs
    if stats is not None:
        reply["stats"] = stats
    return reply


def error_reply(
    request_id: int, code: str, message: str, *, out_end: int | None = None
) -> ErrorReply:
    reply: ErrorReply = {"id": request_id, "ok": False, "code": code, "message": message}
    if out_end is not None:
        reply["out_end"] = out_end
    return reply


class WorkerError(Exception):
    """A failure a worker reports as an :class:`ErrorReply`; ``code`` is a canonical status name
    such as ``"INVALID_ARGUMENT"``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def reply(self, request_id: int, *, out_end: int | None = None) -> ErrorReply:
        """The error reply to the request with ``request_id``."""
        return error_reply(request_id, self.code, self.message, out_end=out_end)


class BadRequest(WorkerError):
    """A request that does not decode (INVALID_ARGUMENT); ``request_id`` is its id, or -1 when
    even that cannot be read."""

    def __init__(self, request_id: int, message: str) -> None:
        super().__init__("INVALID_ARGUMENT", message)
        self.request_id = request_id
