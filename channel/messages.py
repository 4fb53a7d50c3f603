"""The gateway ⇄ worker protocol: one typed message per op, and its encoding on the channel rings.

Every request carries ``"op"`` and an integer ``"id"`` that its reply repeats; build them with the
constructors below (``load_request``, ..., ``error_reply``), never by hand. Tensors travel out of
band in the shared-memory areas (:mod:`channel.shm.payload`), named by a :class:`TensorDesc`::

    {"name": "x", "dtype": "float32", "shape": [8, 64], "offset": 4096, "nbytes": 2048}

Requests and their replies::

    {"op": "load", "id": 1, "key": "mnist:3", "path": "/m/3/model.onnx", "platform": "onnx",
     "intra_op": 1, "inter_op": 1, "tags": ["serve"]}
    -> {"id": 1, "ok": true, "signature": {"inputs": [TensorSpec...], "outputs": [...]}}
       (TensorFlow: "signature": {"signatures": {name: {"inputs", "outputs", "method_name"}}};
        "path" is then the version directory and "tags" choose the MetaGraph; a signature that
        cannot be served, such as "__saved_model_init_op", carries "unservable": <reason> and
        "definition": <base64 SignatureDef bytes> so metadata can show it unchanged)
    {"op": "unload", "id": 2, "key": "mnist:3"} -> {"id": 2, "ok": true}
    {"op": "run", "id": 3, "key": "mnist:3", "inputs": [TensorDesc...], "outputs": ["probs"] | null,
     "deadline": <time.monotonic() seconds> | null, "signature": "serving_default" | "",
     "trace": (<trace id>, <span id>)}                    (trace: only when traced)
    -> {"id": 3, "ok": true, "outputs": [TensorDesc...], "out_end": 12345, "compute_us": 81.2,
        "spans": WorkerSpans}                            (spans: only when traced)
    {"op": "ping", "id": 4} -> {"id": 4, "ok": true, "pid": 1234, "stats": WorkerStats}
    {"op": "ping", "id": 5, "key": "mnist:3"} -> {..., "runs": 6}
       ("runs": runs of that key in this worker since it was loaded; warmup counts them)
    {"op": "stop", "id": 5} -> {"id": 5, "ok": true}   (then the worker exits 0)
    any failure -> {"id": n, "ok": false, "code": "INVALID_ARGUMENT", "message": "..."}
                   (a failed run's reply also carries "out_end")

A started worker first posts ``{"id": 0, "ok": true, "op": "ready", "pid": 1234}``. Run inputs
are offsets in the input area, run outputs offsets in the output area.

The wire encoding is known only to :func:`encode`, :func:`decode_request` and
:func:`decode_reply` (and the slot framing to :mod:`channel.shm.ring`): ``run`` and its
successful reply in the binary layout of :mod:`channel.wire`, every other message as JSON.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, NotRequired, TypedDict, cast

from channel import wire
from channel.json_fields import REQUEST_FIELDS, is_int, is_str
from channel.telemetry import WorkerStats
from channel.wire import WorkerSpans

DEFAULT_SIGNATURE: Final = "serving_default"
"""The signature a request without a signature name gets (TF Serving's default)."""

READY_ID: Final = 0
"""The id of the ``ready`` message; requests are numbered from 1."""


class TensorDesc(TypedDict):
    """A tensor in a shared-memory area: ``offset`` and ``nbytes`` are in bytes from the area's
    start; ``shape`` is fully known (no -1)."""

    name: str
    dtype: str
    shape: list[int]
    offset: int
    nbytes: int


class TensorSpec(TypedDict):
    """A signature entry: ``shape`` has -1 for dynamic dimensions; None is an unknown rank."""

    name: str
    dtype: str
    shape: list[int] | None


class Signature(TypedDict):
    """A single-signature model's inputs and outputs (an ONNX ``load`` reply's ``"signature"``)."""

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]


# -- requests (gateway → worker) --------------------------------------------------------------


class LoadRequest(TypedDict):
    op: Literal["load"]
    id: int
    key: str
    path: str
    platform: str
    intra_op: int
    inter_op: int
    tags: list[str]


class UnloadRequest(TypedDict):
    op: Literal["unload"]
    id: int
    key: str


class RunRequest(TypedDict):
    op: Literal["run"]
    id: int
    key: str
    inputs: list[TensorDesc]
    outputs: list[str] | None
    deadline: float | None
    signature: str
    trace: NotRequired[tuple[int, int]]
    """The batch span's (trace id, span id): the worker's spans are its children (a zero id:
    untraced)."""


class PingRequest(TypedDict):
    op: Literal["ping"]
    id: int
    key: NotRequired[str]


class StopRequest(TypedDict):
    op: Literal["stop"]
    id: int


Request = LoadRequest | UnloadRequest | RunRequest | PingRequest | StopRequest


def load_request(
    request_id: int,
    *,
    key: str,
    path: str,
    platform: str,
    intra_op: int,
    inter_op: int,
    tags: Sequence[str] = ("serve",),
) -> LoadRequest:
    return {
        "op": "load",
        "id": request_id,
        "key": key,
        "path": path,
        "platform": platform,
        "intra_op": intra_op,
        "inter_op": inter_op,
        "tags": list(tags),
    }


def unload_request(request_id: int, *, key: str) -> UnloadRequest:
    return {"op": "unload", "id": request_id, "key": key}


def run_request(
    request_id: int,
    *,
    key: str,
    inputs: list[TensorDesc],
    outputs: Sequence[str] | None = None,
    deadline: float | None = None,
    signature: str = "",
    trace: tuple[int, int] | None = None,
) -> RunRequest:
    """``outputs`` None: every output; ``signature`` "": the model's default; ``trace`` None:
    untraced (the field is then absent)."""
    request: RunRequest = {
        "op": "run",
        "id": request_id,
        "key": key,
        "inputs": inputs,
        "outputs": None if outputs is None else list(outputs),
        "deadline": deadline,
        "signature": signature,
    }
    if trace is not None:
        request["trace"] = trace
    return request


def ping_request(request_id: int, *, key: str | None = None) -> PingRequest:
    request: PingRequest = {"op": "ping", "id": request_id}
    if key is not None:
        request["key"] = key
    return request


def stop_request(request_id: int) -> StopRequest:
    return {"op": "stop", "id": request_id}


# -- replies (worker → gateway) ---------------------------------------------------------------


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
    """A :class:`Signature` (ONNX) or ``{"signatures": {name: ...}}`` (TensorFlow)."""


class RunReply(TypedDict):
    id: int
    ok: Literal[True]
    outputs: list[TensorDesc]
    out_end: int
    compute_us: float
    spans: NotRequired[WorkerSpans]
    """The worker's spans of a traced run."""


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
    outputs: list[TensorDesc],
    out_end: int,
    compute_us: float,
    spans: WorkerSpans | None = None,
) -> RunReply:
    """``spans`` None: an untraced run (the field is then absent)."""
    reply: RunReply = {
        "id": request_id,
        "ok": True,
        "outputs": outputs,
        "out_end": out_end,
        "compute_us": compute_us,
    }
    if spans is not None:
        reply["spans"] = spans
    return reply


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


# -- encoding ---------------------------------------------------------------------------------

_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode(message: Request | Reply) -> bytes:
    """The bytes of one ring slot's body. ValueError for NaN or infinite numbers, or a run
    field out of its binary range."""
    try:
        if message.get("op") == "run":
            return wire.encode_run(message)
        if message.get("ok") is True and "compute_us" in message:
            return wire.encode_run_reply(message)
    except (struct.error, KeyError, OverflowError) as exc:
        raise ValueError(f"run message out of range: {exc}") from None
    return _ENCODER.encode(message).encode()


def decode_request(data: bytes) -> Request:
    """The request in one slot body; BadRequest (INVALID_ARGUMENT) naming what is wrong.
    Unknown fields are ignored."""
    if data[:1] == bytes((wire.RUN_TAG,)):
        try:
            return cast(RunRequest, wire.decode_run(data))
        except wire.Malformed as exc:
            raise BadRequest(exc.request_id, f"run request: {exc}") from None
    try:
        obj = json.loads(data)
    except ValueError:
        raise BadRequest(-1, "request is not JSON") from None
    if not isinstance(obj, dict) or not is_int(obj.get("id")):
        raise BadRequest(-1, "request must be a JSON object with an integer 'id'")
    request_id: int = obj["id"]
    op = obj.get("op")
    fields = REQUEST_FIELDS.get(op) if isinstance(op, str) else None
    if fields is None:
        raise BadRequest(request_id, f"unknown op {op!r}")
    for name, (check, what) in fields.items():
        if name not in obj or not check(obj[name]):
            raise BadRequest(request_id, f"{op} request: {name!r} must be {what}")
    return cast(Request, obj)


def decode_reply(data: bytes) -> Reply:
    """The reply in one slot body. ValueError if it is not a reply at all (the worker is
    trusted beyond that: it built the reply with the constructors above)."""
    if data[:1] == bytes((wire.RUN_REPLY_TAG,)):
        return cast(RunReply, wire.decode_run_reply(data))
    obj = json.loads(data)
    if not (isinstance(obj, dict) and is_int(obj.get("id")) and isinstance(obj.get("ok"), bool)):
        raise ValueError(f"malformed reply {bytes(data[:200])!r}")
    if not obj["ok"] and not (is_str(obj.get("code")) and is_str(obj.get("message"))):
        raise ValueError(f"malformed error reply {bytes(data[:200])!r}")
    return cast(Reply, obj)
