"""The binary layout of ``run`` and its reply, through :mod:`channel.messages` (its one user)."""

from __future__ import annotations

import json

import pytest

from channel import messages, wire
from channel.dtypes import DTYPE_NAMES
from channel.messages import BadRequest, TensorDesc

TRACE = (2**128 - 1, 2**64 - 1)  # every bit of both ids


def tensor(name: str, dtype: str, shape: list[int], offset: int = 64) -> TensorDesc:
    return TensorDesc(name, dtype, tuple(shape), offset, 8)


def test_run_and_its_reply_travel_binary_and_everything_else_as_json() -> None:
    run = messages.run_request(1, key="m:1", inputs=[tensor("x", "float32", [2, 3])])
    reply = messages.run_reply(1, outputs=[tensor("y", "float32", [2])], out_end=64, compute_us=1)
    assert messages.encode(run)[0] == wire.RUN_TAG
    assert messages.encode(reply)[0] == wire.RUN_REPLY_TAG
    assert len(messages.encode(run)) < len(json.dumps(run._asdict()))
    failed = messages.error_reply(1, "INTERNAL", "boom", out_end=64)
    assert json.loads(messages.encode(failed)) == failed
    assert json.loads(messages.encode(messages.ping_request(2))) == {"op": "ping", "id": 2}


def test_every_dtype_rank_and_field_survives() -> None:
    inputs = [
        tensor(f"in-{dtype}-é", dtype, [3] * rank, offset=2**40 + rank)
        for rank, dtype in enumerate(sorted(DTYPE_NAMES))
    ]
    request = messages.run_request(
        2**62,
        key="model/with:odd names",
        inputs=inputs,
        outputs=("a", "b"),
        deadline=123456.789012,
        signature="sig",
        trace=TRACE,
    )
    assert messages.decode_request(messages.encode(request)) == request
    empty = messages.run_request(3, key="k", inputs=[], outputs=())
    assert messages.decode_request(messages.encode(empty)) == empty
    reply = messages.run_reply(4, outputs=inputs, out_end=2**50, compute_us=0.25)
    assert messages.decode_reply(messages.encode(reply)) == reply
    decoded = messages.decode_reply(messages.encode(reply))
    assert isinstance(decoded, messages.RunReply)
    assert all(type(t) is TensorDesc and type(t.shape) is tuple for t in decoded.outputs)


def test_a_damaged_binary_run_request_is_refused_with_its_id() -> None:
    data = messages.encode(messages.run_request(9, key="k", inputs=[tensor("x", "int8", [4])]))
    for damaged in (data[:-1], data + b"\0"):
        with pytest.raises(BadRequest) as caught:
            messages.decode_request(damaged)
        assert caught.value.request_id == 9
    with pytest.raises(BadRequest) as caught:
        messages.decode_request(data[:5])
    assert caught.value.request_id == -1
    unknown_dtype = bytearray(data)
    unknown_dtype[data.index(b"x") - 2 - 8 - 8 - 8 - 2] = 250  # the tensor's dtype index
    with pytest.raises(BadRequest, match="dtype"):
        messages.decode_request(bytes(unknown_dtype))


def test_a_damaged_binary_reply_is_refused() -> None:
    reply = messages.run_reply(5, outputs=[tensor("y", "float32", [2])], out_end=1, compute_us=2)
    with pytest.raises(ValueError, match="truncated"):
        messages.decode_reply(messages.encode(reply)[:-1])


def test_values_the_layout_cannot_carry_are_refused_when_encoding() -> None:
    with pytest.raises(ValueError):
        messages.encode(messages.run_request(1, key="k", inputs=[tensor("x", "float32", [-1])]))
    with pytest.raises(ValueError):
        messages.encode(messages.run_request(1, key="k", inputs=[], deadline=float("inf")))
