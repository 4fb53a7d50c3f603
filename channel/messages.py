"""The gateway ⇄ worker protocol: one typed message per op, and its encoding on the channel rings.

Every request carries an integer id that its reply repeats; build them with the constructors
(``load_request``, ..., ``error_reply``), never by hand. The requests and their constructors are
:mod:`channel.requests`'s, the replies and the worker's errors :mod:`channel.replies`'s; every
name is importable from here too. Tensors travel out of band in the shared-memory areas
(:mod:`channel.shm.payload`), named by a :class:`~channel.descriptors.TensorDesc`::

    TensorDesc(name="x", dtype="float32", shape=(8, 64), offset=4096, nbytes=2048)

Control requests and every reply but a run's success are JSON objects with ``"op"`` / ``"ok"``;
a run and its successful reply are named tuples that travel in a binary layout::

    {"op": "load", "id": 1, "key": "mnist:3", "path": "/m/3/model.onnx", "platform": "onnx",
     "intra_op": 1, "inter_op": 1, "tags": ["serve"]}
    -> {"id": 1, "ok": true, "signature": {"inputs": [WireTensorSpec...], "outputs": [...]}}
       (TensorFlow: "signature": {"signatures": {name: {"inputs", "outputs", "method_name"}}};
        "path" is then the version directory and "tags" choose the MetaGraph; a signature that
        cannot be served, such as "__saved_model_init_op", carries "unservable": <reason> and
        "definition": <base64 SignatureDef bytes> so metadata can show it unchanged)
    {"op": "unload", "id": 2, "key": "mnist:3"} -> {"id": 2, "ok": true}
    RunRequest(id=3, key="mnist:3", inputs=(TensorDesc...), outputs=("probs",) | None,
               deadline=<time.monotonic() seconds> | None, signature="serving_default" | "",
               trace=(<trace id>, <span id>) | None)
    -> RunReply(id=3, outputs=(TensorDesc...), out_end=12345, compute_us=81.2,
                spans=WorkerSpans | None)                (spans: only when traced)
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
successful reply in the binary layout of :mod:`channel.wire`, every other message as JSON. A
request's id is :func:`request_id`'s, a reply's :func:`reply_id`'s.
"""

from __future__ import annotations

import json
import struct
from typing import Final, cast

from channel import wire
from channel.binary import Malformed
from channel.descriptors import TensorDesc, WireSignature, WireTensorSpec
from channel.json_fields import REQUEST_FIELDS, is_int, is_str
from channel.replies import (
    READY_ID,
    BadRequest,
    ErrorReply,
    LoadReply,
    OkReply,
    PingReply,
    Ready,
    Reply,
    RunReply,
    WorkerError,
    error_reply,
    load_reply,
    ok_reply,
    ping_reply,
    ready,
    run_reply,
)
from channel.requests import (
    DEFAULT_SIGNATURE,
    LoadRequest,
    PingRequest,
    Request,
    RunRequest,
    StopRequest,
    UnloadRequest,
    load_request,
    ping_request,
    run_request,
    stop_request,
    unload_request,
)

__all__ = [
    "DEFAULT_SIGNATURE",
    "READY_ID",
    "BadRequest",
    "ErrorReply",
    "LoadReply",
    "LoadRequest",
    "OkReply",
    "PingReply",
    "PingRequest",
    "Ready",
    "Reply",
    "Request",
    "RunReply",
    "RunRequest",
    "StopRequest",
    "TensorDesc",
    "UnloadRequest",
    "WireSignature",
    "WireTensorSpec",
    "WorkerError",
    "decode_reply",
    "decode_request",
    "encode",
    "error_reply",
    "load_reply",
    "load_request",
    "ok_reply",
    "ping_reply",
    "ping_request",
    "ready",
    "reply_id",
    "request_id",
    "run_reply",
    "run_request",
    "stop_request",
    "unload_request",
]

# -- encoding ---------------------------------------------------------------------------------

_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_RUN_TAG: Final = bytes((wire.RUN_TAG,))
_RUN_REPLY_TAG: Final = bytes((wire.RUN_REPLY_TAG,))


def encode(message: Request | Reply) -> bytes:
    """The bytes of one ring slot's body. ValueError for NaN or infinite numbers, or a run
    field out of its binary range."""
    try:
        if isinstance(message, RunRequest):
            return wire.encode_run(message)
        if isinstance(message, RunReply):
            return wire.encode_run_reply(message)
    except (struct.error, KeyError, OverflowError) as exc:
        raise ValueError(f"run message out of range: {exc}") from None
    return _ENCODER.encode(message).encode()


def decode_request(data: bytes) -> Request:
    """The request in one slot body; BadRequest (INVALID_ARGUMENT) naming what is wrong.
    Unknown fields are ignored."""
    if data[:1] == _RUN_TAG:
        try:
            return wire.decode_run(data)
        except Malformed as exc:
            raise BadRequest(exc.request_id, f"run request: {exc}") from None
    try:
        obj = json.loads(data)
    except ValueError:
        raise BadRequest(-1, "request is not JSON") from None
    if not isinstance(obj, dict) or not is_int(obj.get("id")):
        raise BadRequest(-1, "request must be a JSON object with an integer 'id'")
    request_id: int = obj["id"]
    op = obj.get("op")
    if op == "run":
        raise BadRequest(request_id, "a run request travels in the binary layout, not as JSON")
    fields = REQUEST_FIELDS.get(op) if isinstance(op, str) else None
    if fields is None:
        raise BadRequest(request_id, f"unknown op {op!r}")
    for name, (check, what) in fields.items():
        if name not in obj or not check(obj[name]):
            raise BadRequest(request_id, f"{op} request: {name!r} must be {what}")
    return cast(Request, obj)


def decode_reply(data: bytes) -> Reply:
    """The reply in one slot body. ValueError if it is not a reply at all (the worker is
    trusted beyond that: it built the reply with the constructors of :mod:`channel.replies`)."""
    if data[:1] == _RUN_REPLY_TAG:
        return wire.decode_run_reply(data)
    obj = json.loads(data)
    if not (isinstance(obj, dict) and is_int(obj.get("id")) and isinstance(obj.get("ok"), bool)):
        raise ValueError(f"malformed reply {bytes(data[:200])!r}")
    if not obj["ok"] and not (is_str(obj.get("code")) and is_str(obj.get("message"))):
        raise ValueError(f"malformed error reply {bytes(data[:200])!r}")
    return cast(Reply, obj)


def request_id(request: Request) -> int:
    """The id of ``request`` (its reply repeats it)."""
    return request.id if isinstance(request, RunRequest) else request["id"]


def reply_id(reply: Reply) -> int:
    """The id of the request ``reply`` answers."""
    return reply.id if isinstance(reply, RunReply) else reply["id"]
