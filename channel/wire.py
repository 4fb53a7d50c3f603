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

Both directions go straight between the bytes and the typed messages
(:class:`~channel.requests.RunRequest`, :class:`~channel.replies.RunReply`, their
:class:`~channel.descriptors.TensorDesc` tuples), in one pass with no intermediate objects: a run
crosses these functions once on each side, so they are written out flat.
"""

from __future__ import annotations

import functools
import math
import struct
from typing import Final

from channel.binary import LEN, Malformed, write_str
from channel.descriptors import TensorDesc
from channel.dtypes import DTYPE_NAMES
from channel.replies import RunReply
from channel.requests import RunRequest
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
_TRUNCATED: Final = "truncated binary message"


@functools.cache
def _dims(rank: int) -> struct.Struct:
    return struct.Struct(f"<{rank}Q")


# -- encoding ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _str(text: str) -> bytes:
    """``text`` as :func:`write_str` writes it (keys, signatures and tensor names repeat run
    after run: a hit runs no Python code)."""
    out: list[bytes] = []
    write_str(out, text)
    return b"".join(out)


def encode_run(run: RunRequest) -> bytes:
    """``run`` in the binary layout. ValueError for a non-finite deadline; struct.error /
    KeyError for fields out of range (a negative dimension, an unknown dtype)."""
    request_id, key, inputs, outputs, deadline, signature, trace = run
    flags = 0
    if deadline is not None:
        if not math.isfinite(deadline):
            raise ValueError(f"deadline must be finite, got {deadline}")
        flags = _HAS_DEADLINE
    if outputs is not None:
        flags |= _HAS_OUTPUTS
    if trace is not None:
        flags |= _HAS_TRACE
    out = [
        _RUN.pack(
            RUN_TAG,
            request_id,
            flags,
            0.0 if deadline is None else deadline,
            len(inputs),
            0 if outputs is None else len(outputs),
        ),
        _str(key),
        _str(signature),
    ]
    if trace is not None:
        trace_id, span_id = trace
        out.append(_TRACE.pack(trace_id >> 64, trace_id & _LOW64, span_id))
    for name, dtype, shape, offset, nbytes in inputs:
        out.append(_TENSOR.pack(_DTYPE_INDEX[dtype], len(shape), offset, nbytes))
        out.append(_dims(len(shape)).pack(*shape))
        out.append(_str(name))
    if outputs is not None:
        out.extend(map(_str, outputs))
    return b"".join(out)


def encode_run_reply(reply: RunReply) -> bytes:
    """``reply`` in the binary layout, with its spans when present (traced runs only)."""
    request_id, outputs, out_end, compute_us, spans = reply
    flags = 0 if spans is None else _HAS_SPANS
    out = [_REPLY.pack(RUN_REPLY_TAG, request_id, flags, out_end, compute_us, len(outputs))]
    for name, dtype, shape, offset, nbytes in outputs:
        out.append(_TENSOR.pack(_DTYPE_INDEX[dtype], len(shape), offset, nbytes))
        out.append(_dims(len(shape)).pack(*shape))
        out.append(_str(name))
    if spans is not None:
        out.append(_SPANS.pack(spans.count, len(spans.data)))
        out.append(spans.data)
    return b"".join(out)


# -- decoding ---------------------------------------------------------------------------------
# Each string is read inline (length, bounds, UTF-8), and each encoder writes its tensors itself:
# a helper would be a Python call per string or per message.


def _read_tensors(
    data: bytes, at: int, count: int, request_id: int
) -> tuple[list[TensorDesc], int]:
    """``count`` tensors from ``data[at:]`` and where they end. Malformed (naming
    ``request_id``) for an unknown dtype; struct.error, UnicodeDecodeError or
    :data:`_TRUNCATED` (a ValueError) for bytes that do not parse (the caller names them)."""
    size = len(data)
    tensors: list[TensorDesc] = []
    for _ in range(count):
        dtype, rank, offset, nbytes = _TENSOR.unpack_from(data, at)
        if dtype >= len(DTYPE_ORDER):
            raise Malformed(request_id, f"unknown dtype index {dtype}")
        at += _TENSOR.size
        dims = _dims(rank)
        shape = dims.unpack_from(data, at)
        at += dims.size
        (length,) = LEN.unpack_from(data, at)
        at += LEN.size
        end = at + length
        if end > size:
            raise ValueError(_TRUNCATED)
        name = data[at:end].decode()
        at = end
        tensors.append(tuple.__new__(TensorDesc, (name, DTYPE_ORDER[dtype], shape, offset, nbytes)))
    return tensors, at


def decode_run(data: bytes) -> RunRequest:
    """The ``run`` request :func:`encode_run` wrote; Malformed if ``data`` is not one."""
    try:
        tag, request_id, flags, deadline, n_inputs, n_outputs = _RUN.unpack_from(data, 0)
    except struct.error:
        raise Malformed(-1, _TRUNCATED) from None
    if tag != RUN_TAG:
        raise Malformed(-1, f"not a run request (tag {tag})")
    size = len(data)
    try:
        at = _RUN.size
        (length,) = LEN.unpack_from(data, at)
        at += LEN.size
        end = at + length
        if end > size:
            raise ValueError(_TRUNCATED)
        key = data[at:end].decode()
        (length,) = LEN.unpack_from(data, end)
        at = end + LEN.size
        end = at + length
        if end > size:
            raise ValueError(_TRUNCATED)
        signature = data[at:end].decode()
        at = end
        trace = None
        if flags & _HAS_TRACE:
            high, low, span_id = _TRACE.unpack_from(data, at)
            at += _TRACE.size
            trace = (high << 64 | low, span_id)
        inputs, at = _read_tensors(data, at, n_inputs, request_id)
        names: list[str] = []
        for _ in range(n_outputs):
            (length,) = LEN.unpack_from(data, at)
            at += LEN.size
            end = at + length
            if end > size:
                raise ValueError(_TRUNCATED)
            names.append(data[at:end].decode())
            at = end
    except UnicodeDecodeError:
        raise Malformed(request_id, "a string is not UTF-8") from None
    except Malformed:
        raise
    except (struct.error, ValueError):
        raise Malformed(request_id, _TRUNCATED) from None
    if at != size:
        raise Malformed(request_id, "trailing bytes after a binary message")
    outputs = tuple(names) if flags & _HAS_OUTPUTS else None
    deadline = deadline if flags & _HAS_DEADLINE else None
    values = (request_id, key, tuple(inputs), outputs, deadline, signature, trace)
    return tuple.__new__(RunRequest, values)


def decode_run_reply(data: bytes) -> RunReply:
    """The reply :func:`encode_run_reply` wrote; Malformed if ``data`` is not one."""
    try:
        tag, request_id, flags, out_end, compute_us, n_outputs = _REPLY.unpack_from(data, 0)
    except struct.error:
        raise Malformed(-1, _TRUNCATED) from None
    if tag != RUN_REPLY_TAG:
        raise Malformed(-1, f"not a run reply (tag {tag})")
    spans = None
    try:
        outputs, at = _read_tensors(data, _REPLY.size, n_outputs, request_id)
        if flags & _HAS_SPANS:
            count, length = _SPANS.unpack_from(data, at)
            at += _SPANS.size + length
            if at > len(data):
                raise ValueError(_TRUNCATED)
            spans = WorkerSpans(count, data[at - length : at])
    except UnicodeDecodeError:
        raise Malformed(request_id, "a string is not UTF-8") from None
    except Malformed:
        raise
    except (struct.error, ValueError):
        raise Malformed(request_id, _TRUNCATED) from None
    if at != len(data):
        raise Malformed(request_id, "trailing bytes after a binary message")
    values = (request_id, tuple(outputs), out_end, compute_us, spans)
    return tuple.__new__(RunReply, values)
