"""The binary layout of the two hot messages, ``run`` and its successful reply.

:mod:`workers.messages` defines every message and is the only caller: it sends these two in
this layout and every other message (load, ping, errors, ...) as JSON, which never starts with
the tag bytes below. All integers little-endian; strings UTF-8 with a uint16 length before them.

Run request (tag ``0x01``)::

    B tag, q id, B flags (1: deadline, 2: outputs listed, 4: traceparent), d deadline,
    H inputs, H outputs; str key, str signature, [str traceparent];
    inputs × tensor; outputs × str

Run reply (tag ``0x02``)::

    B tag, q id, B flags (1: spans), Q out_end, d compute_us, H outputs;
    outputs × tensor; [I length + JSON list of spans]

Tensor: ``B dtype index (in :data:`DTYPE_ORDER`), B rank, Q offset, Q nbytes, rank × Q dims, str
name``. Decoding raises :class:`Malformed` (with the id once it is known) for anything that does
not parse; the caller maps it to its own error.
"""

from __future__ import annotations

import functools
import json
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

from workers.dtypes import DTYPE_NAMES

RUN_TAG: Final = 0x01
RUN_REPLY_TAG: Final = 0x02
DTYPE_ORDER: Final = tuple(sorted(DTYPE_NAMES))
"""Wire index → dtype name (both ends run the same code, so the order is shared)."""
_DTYPE_INDEX: Final = {name: i for i, name in enumerate(DTYPE_ORDER)}

_RUN: Final = struct.Struct("<BqBdHH")
_REPLY: Final = struct.Struct("<BqBQdH")
_TENSOR: Final = struct.Struct("<BBQQ")
_LEN: Final = struct.Struct("<H")
_SPANS_LEN: Final = struct.Struct("<I")
_HAS_DEADLINE, _HAS_OUTPUTS, _HAS_TRACEPARENT = 1, 2, 4
_HAS_SPANS = 1


@functools.cache
def _dims(rank: int) -> struct.Struct:
    return struct.Struct(f"<{rank}Q")


class Malformed(ValueError):
    """Bytes that do not hold a message of this layout; ``request_id`` is -1 until read."""

    def __init__(self, request_id: int, message: str) -> None:
        super().__init__(message)
        self.request_id = request_id


# -- encoding ---------------------------------------------------------------------------------


def _str(out: list[bytes], text: str) -> None:
    data = text.encode()
    out.append(_LEN.pack(len(data)))
    out.append(data)


def _tensors(out: list[bytes], tensors: Sequence[Mapping[str, Any]]) -> None:
    for t in tensors:
        shape = t["shape"]
        out.append(_TENSOR.pack(_DTYPE_INDEX[t["dtype"]], len(shape), t["offset"], t["nbytes"]))
        out.append(_dims(len(shape)).pack(*shape))
        _str(out, t["name"])


def encode_run(request: Mapping[str, Any]) -> bytes:
    """A ``run`` request (as :func:`workers.messages.run_request` builds it). ValueError for a
    non-finite deadline; struct.error / KeyError for fields out of range."""
    deadline, outputs = request["deadline"], request["outputs"]
    traceparent = request.get("traceparent")
    if deadline is not None and not math.isfinite(deadline):
        raise ValueError(f"deadline must be finite, got {deadline}")
    flags = (
        (_HAS_DEADLINE if deadline is not None else 0)
        | (_HAS_OUTPUTS if outputs is not None else 0)
        | (_HAS_TRACEPARENT if traceparent is not None else 0)
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
    _str(out, request["key"])
    _str(out, request["signature"])
    if traceparent is not None:
        _str(out, traceparent)
    _tensors(out, inputs)
    for name in outputs or ():
        _str(out, name)
    return b"".join(out)


def encode_run_reply(reply: Mapping[str, Any]) -> bytes:
    """A successful ``run`` reply (as :func:`workers.messages.run_reply` builds it); its spans,
    when present, travel as JSON (traced runs only)."""
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
        data = json.dumps(spans, separators=(",", ":"), allow_nan=False).encode()
        out.append(_SPANS_LEN.pack(len(data)))
        out.append(data)
    return b"".join(out)


# -- decoding ---------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, request_id: int = -1) -> None:
        self.data = data
        self.at = 0
        self.request_id = request_id

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...]:
        try:
            values = layout.unpack_from(self.data, self.at)
        except struct.error:
            raise Malformed(self.request_id, "truncated binary message") from None
        self.at += layout.size
        return values

    def text(self) -> str:
        (length,) = self.unpack(_LEN)
        end = self.at + length
        if end > len(self.data):
            raise Malformed(self.request_id, "truncated binary message")
        try:
            text = self.data[self.at : end].decode()
        except UnicodeDecodeError:
            raise Malformed(self.request_id, "a string is not UTF-8") from None
        self.at = end
        return text

    def tensors(self, count: int) -> list[dict[str, Any]]:
        tensors = []
        for _ in range(count):
            dtype, rank, offset, nbytes = self.unpack(_TENSOR)
            if dtype >= len(DTYPE_ORDER):
                raise Malformed(self.request_id, f"unknown dtype index {dtype}")
            shape = list(self.unpack(_dims(rank)))
            name = self.text()
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

    def header(self, layout: struct.Struct, tag: int, what: str) -> tuple[Any, ...]:
        """The fixed header (``layout``: tag, id, then the rest); Malformed unless its tag is
        ``tag``. Later errors name the id."""
        fields = self.unpack(layout)
        if fields[0] != tag:
            raise Malformed(-1, f"not a {what} (tag {fields[0]})")
        self.request_id = fields[1]
        return fields[2:]

    def end(self) -> None:
        if self.at != len(self.data):
            raise Malformed(self.request_id, "trailing bytes after a binary message")


def decode_run(data: bytes) -> dict[str, Any]:
    """The ``run`` request :func:`encode_run` wrote; Malformed if ``data`` is not one."""
    reader = _Reader(data)
    flags, deadline, n_inputs, n_outputs = reader.header(_RUN, RUN_TAG, "run request")
    request: dict[str, Any] = {"op": "run", "id": reader.request_id, "key": reader.text()}
    request["signature"] = reader.text()
    if flags & _HAS_TRACEPARENT:
        request["traceparent"] = reader.text()
    request["inputs"] = reader.tensors(n_inputs)
    names = [reader.text() for _ in range(n_outputs)]
    request["outputs"] = names if flags & _HAS_OUTPUTS else None
    request["deadline"] = deadline if flags & _HAS_DEADLINE else None
    reader.end()
    return request


def decode_run_reply(data: bytes) -> dict[str, Any]:
    """The reply :func:`encode_run_reply` wrote; Malformed if ``data`` is not one."""
    reader = _Reader(data)
    flags, out_end, compute_us, n_outputs = reader.header(_REPLY, RUN_REPLY_TAG, "run reply")
    request_id = reader.request_id
    reply: dict[str, Any] = {"id": request_id, "ok": True}
    reply["outputs"] = reader.tensors(n_outputs)
    reply["out_end"] = out_end
    reply["compute_us"] = compute_us
    if flags & _HAS_SPANS:
        (length,) = reader.unpack(_SPANS_LEN)
        try:
            reply["spans"] = json.loads(data[reader.at : reader.at + length])
        except ValueError:
            raise Malformed(request_id, "the spans of a run reply are not JSON") from None
        reader.at += length
    reader.end()
    return reply
