"""The binary layout of the two hot messages, ``run`` and its successful reply.

:mod:`channel.messages` defines every message and is the only caller: it sends these two in
this layout and every other message (load, ping, errors, ...) as JSON, which never starts with
the tag bytes below. All integers little-endian; strings UTF-8 with a uint16 length before them
(:mod:`channel.binary`).

Run request (tag ``0x01``)::

    B tag, q id, B flags (1: deadline, 2: outputs listed, 4: traced), d deadline,
    H inputs, H outputs; str key, str signature, [Q trace id high, Q trace id low, Q span id];
    inputs × tensor; outputs × str

Run reply (tag ``0x02``)::

    B tag, q id, B flags (1: spans), Q out_end, d compute_us, H outputs;
    outputs × tensor; [H spans, I bytes, spans × span]

Span: see :mod:`channel.span_wire`.

Tensor: ``B dtype index (in :data:`DTYPE_ORDER`), B rank, Q offset, Q nbytes, rank × Q dims, str
name``. Decoding raises :class:`~channel.binary.Malformed` (with the id once it is known) for
anything that does not parse; the caller maps it to its own error.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

from channel.binary import Malformed, Reader, write_str
from channel.dtypes import DTYPE_NAMES
from channel.span_wire import WorkerSpans

__all__ = [
    "DTYPE_ORDER",
    "RUN_REPLY_TAG",
    "RUN_TAG",
    "decode_run",
    "decode_run_reply",
    "encode_run",
    "encode_run_reply",
]

RUN_TAG: Final = 0x01
RUN_REPLY_TAG: Final = 0x02
DTYPE_ORDER: Final = tuple(sorted(DTYPE_NAMES))
"""Wire index → dtype name (both ends run the same code, so the order is shared)."""
_DTYPE_INDEX: Final = {name: i for i, name in enumerate(DTYPE_ORDER)}

_RUN: Final = struct.Struct("<BqBdHH")
_REPLY: Final = struct.Struct("<BqBQdH")
_TENSOR: Final = struct.Struct("<BBQQ")
_SPANS: Final = struct.Struct("<HI")
_TRACE: Final = struct.Struct("<QQQ")
_LOW64: Final = (1 << 64) - 1
_HAS_DEADLINE, _HAS_OUTPUTS, _HAS_TRACE = 1, 2, 4
_HAS_SPANS = 1


@functools.cache
def _dims(rank: int) -> struct.Struct:
    return struct.Struct(f"<{rank}Q")


# -- encoding ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _name(text: str) -> bytes:
    """A tensor name as :func:`write_str` writes it (names repeat run after run)."""
    out: list[bytes] = []
    write_str(out, text)
    return b"".join(out)


def _tensors(out: list[bytes], tensors: Sequence[Mapping[str, Any]]) -> None:
    for t in tensors:
        shape = t["shape"]
        out.append(_TENSOR.pack(_DTYPE_INDEX[t["dtype"]], len(shape), t["offset"], t["nbytes"]))
        out.append(_dims(len(shape)).pack(*shape))
        out.append(_name(t["name"]))


def encode_run(request: Mapping[str, Any]) -> bytes:
    """A ``run`` request (as :func:`channel.messages.run_request` builds it). ValueError for a
    non-finite deadline; struct.error / KeyError for fields out of range."""
    deadline, outputs = request["deadline"], request["outputs"]
    trace = request.get("trace")
    if deadline is not None and not math.isfinite(deadline):
        raise ValueError(f"deadline must be finite, got {deadline}")
    flags = (
        (_HAS_DEADLINE if deadline is not None else 0)
        | (_HAS_OUTPUTS if outputs is not None else 0)
        | (_HAS_TRACE if trace is not None else 0)
    )
    inputs = request["inputs"]
    out = [
        _RUN.pack(
            RUN_TAG,
            request["id"],
            flags,
            0.0 if deadline is None else deadline,
            len(inputs),
            0 if outputs is None else len(outputs),
        )
    ]
    write_str(out, request["key"])
    write_str(out, request["signature"])
    if trace is not None:
        trace_id, span_id = trace
        out.append(_TRACE.pack(trace_id >> 64, trace_id & _LOW64, span_id))
    _tensors(out, inputs)
    for name in outputs or ():
        write_str(out, name)
    return b"".join(out)


def encode_run_reply(reply: Mapping[str, Any]) -> bytes:
    """A successful ``run`` reply (as :func:`channel.messages.run_reply` builds it), with its
    spans when present (traced runs only)."""
    spans = reply.get("spans")
    outputs = reply["outputs"]
    flags = _HAS_SPANS if spans is not None else 0
    out = [
        _REPLY.pack(
            RUN_REPLY_TAG, reply["id"], flags, reply["out_end"], reply["compute_us"], len(outputs)
        )
    ]
    _tensors(out, outputs)
    if spans is not None:
        out.append(_SPANS.pack(spans.count, len(spans.data)))
        out.append(spans.data)
    return b"".join(out)


# -- decoding ---------------------------------------------------------------------------------


def _read_tensors(reader: Reader, count: int) -> list[dict[str, Any]]:
    tensors = []
    for _ in range(count):
        dtype, rank, offset, nbytes = reader.unpack(_TENSOR)
        if dtype >= len(DTYPE_ORDER):
            raise Malformed(reader.request_id, f"unknown dtype index {dtype}")
        shape = list(reader.unpack(_dims(rank)))
        name = reader.text()
        tensors.append(
            {
                "name": name,
                "dtype": DTYPE_ORDER[dtype],
                "shape": shape,
                "offset": offset,
                "nbytes": nbytes,
            }
        )
    return tensors


def decode_run(data: bytes) -> dict[str, Any]:
    """The ``run`` request :func:`encode_run` wrote; Malformed if ``data`` is not one."""
    reader = Reader(data)
    flags, deadline, n_inputs, n_outputs = reader.header(_RUN, RUN_TAG, "run request")
    request: dict[str, Any] = {"op": "run", "id": reader.request_id, "key": reader.text()}
    request["signature"] = reader.text()
    if flags & _HAS_TRACE:
        high, low, span_id = reader.unpack(_TRACE)
        request["trace"] = (high << 64 | low, span_id)
    request["inputs"] = _read_tensors(reader, n_inputs)
    names = [reader.text() for _ in range(n_outputs)]
    request["outputs"] = names if flags & _HAS_OUTPUTS else None
    request["deadline"] = deadline if flags & _HAS_DEADLINE else None
    reader.end()
    return request


def decode_run_reply(data: bytes) -> dict[str, Any]:
    """The reply :func:`encode_run_reply` wrote; Malformed if ``data`` is not one."""
    reader = Reader(data)
    flags, out_end, compute_us, n_outputs = reader.header(_REPLY, RUN_REPLY_TAG, "run reply")
    request_id = reader.request_id
    reply: dict[str, Any] = {"id": request_id, "ok": True}
    reply["outputs"] = _read_tensors(reader, n_outputs)
    reply["out_end"] = out_end
    reply["compute_us"] = compute_us
    if flags & _HAS_SPANS:
        count, length = reader.unpack(_SPANS)
        reply["spans"] = WorkerSpans(count, reader.take(length))
    reader.end()
    return reply
