"""The worker protocol's messages on the wire: every one round-trips, and the decoder's checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from channel import messages
from channel.messages import BadRequest, Reply, Request
from channel.span_wire import WorkerSpans
from tests.channel.samples import STATS, X

REQUESTS: list[Request] = [
    messages.load_request(
        1, key="m:3", path="/m/3/model.onnx", platform="onnx", intra_op=1, inter_op=2
    ),
    messages.load_request(
        2, key="t:1", path="/t/1", platform="tensorflow", intra_op=1, inter_op=1, tags=("a", "b")
    ),
    messages.unload_request(3, key="m:3"),
    messages.run_request(4, key="m:3", inputs=[X]),
    messages.run_request(
        5, key="m:3", inputs=[X], outputs=("probs",), deadline=12.5, signature="serving_default"
    ),
    messages.ping_request(6),
    messages.ping_request(8, key="m:3"),
    messages.stop_request(7),
    messages.run_request(8, key="m:3", inputs=[X], trace=(2**100 + 3, 2**63)),
]

REPLIES: list[Reply] = [
    messages.ready(1234),
    messages.ok_reply(3),
    messages.load_reply(1, {"inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 4]}]}),
    messages.run_reply(4, outputs=[X], out_end=8192, compute_us=81.2),
    messages.ping_reply(6, 1234),
    messages.ping_reply(8, 1234, runs=6),
    messages.ping_reply(
        7,
        1234,
        stats=STATS,
    ),
    messages.run_reply(
        10,
        outputs=[X],
        out_end=8192,
        compute_us=8.5,
        spans=WorkerSpans.of(
            [
                {
                    "pid": 1234,
                    "name": "compute",
                    "span_id": 0xCCCC_CCCC_CCCC_CCCC,
                    "parent_id": 0xBBBB_BBBB_BBBB_BBBB,
                    "start_ns": 1_700_000_000_000_000_000,
                    "end_ns": 1_700_000_000_000_008_500,
                    "attributes": {"tensorgate.model": "m:3"},
                }
            ]
        ),
    ),
    messages.error_reply(8, "NOT_FOUND", "no such model"),
    messages.error_reply(9, "DEADLINE_EXCEEDED", "late", out_end=8192),
]


def _request_name(request: Request) -> str:
    op = "run" if isinstance(request, messages.RunRequest) else request["op"]
    return f"{op}-{messages.request_id(request)}"


@pytest.mark.parametrize("request_", REQUESTS, ids=_request_name)
def test_every_request_round_trips(request_: Request) -> None:
    decoded = messages.decode_request(messages.encode(request_))
    assert decoded == request_ and type(decoded) is type(request_)
    assert messages.request_id(decoded) == messages.request_id(request_)


@pytest.mark.parametrize("reply", REPLIES, ids=lambda r: str(messages.reply_id(r)))
def test_every_reply_round_trips(reply: Reply) -> None:
    decoded = messages.decode_reply(messages.encode(reply))
    assert decoded == reply and type(decoded) is type(reply)


def test_the_wire_is_compact_json_as_documented() -> None:
    assert messages.encode(messages.ping_request(4)) == b'{"op":"ping","id":4}'
    assert messages.encode(messages.ready(1234)) == b'{"id":0,"ok":true,"op":"ready","pid":1234}'
    assert json.loads(messages.encode(REQUESTS[0])) == {
        "op": "load",
        "id": 1,
        "key": "m:3",
        "path": "/m/3/model.onnx",
        "platform": "onnx",
        "intra_op": 1,
        "inter_op": 2,
        "tags": ["serve"],
    }


def test_numbers_json_cannot_carry_are_refused_when_encoding() -> None:
    with pytest.raises(ValueError):
        messages.encode(messages.run_request(1, key="k", inputs=[], deadline=float("nan")))


def test_unknown_fields_are_ignored() -> None:
    data = json.dumps({"op": "ping", "id": 5, "trace": "00-abc"}).encode()
    assert messages.decode_request(data)["id"] == 5  # type: ignore[call-overload]


def _bad(obj: Any) -> BadRequest:
    data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    with pytest.raises(BadRequest) as info:
        messages.decode_request(data)
    assert info.value.code == "INVALID_ARGUMENT"
    return info.value


def test_requests_without_a_readable_id_are_refused_with_id_minus_one() -> None:
    for data in (b"\xff not json", b"[1, 2]", {"op": "ping"}, {"op": "ping", "id": True}):
        error = _bad(data)
        assert error.request_id == -1
    assert _bad(b"{").message == "request is not JSON"
    assert _bad({"op": "ping", "id": "1"}).message == (
        "request must be a JSON object with an integer 'id'"
    )


def test_a_run_sent_as_json_is_refused() -> None:
    error = _bad({"op": "run", "id": 4, "key": "m:3", "inputs": []})
    assert error.request_id == 4
    assert error.message == "a run request travels in the binary layout, not as JSON"


def test_unknown_op_keeps_the_id() -> None:
    error = _bad({"op": "frobnicate", "id": 9})
    assert (error.request_id, error.message) == (9, "unknown op 'frobnicate'")
    assert error.reply(9) == {
        "id": 9,
        "ok": False,
        "code": "INVALID_ARGUMENT",
        "message": "unknown op 'frobnicate'",
    }


_LOAD: dict[str, Any] = dict(REQUESTS[0])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({**_LOAD, "path": None}, "load request: 'path' must be a string"),
        ({k: v for k, v in _LOAD.items() if k != "key"}, "load request: 'key' must be a string"),
        ({**_LOAD, "intra_op": 1.0}, "load request: 'intra_op' must be an integer"),
        ({**_LOAD, "inter_op": False}, "load request: 'inter_op' must be an integer"),
        ({**_LOAD, "tags": []}, "load request: 'tags' must be a non-empty list of strings"),
        ({**_LOAD, "tags": ["serve", 1]}, "'tags' must be a non-empty list of strings"),
        ({"op": "unload", "id": 1}, "unload request: 'key' must be a string"),
    ],
)
def test_malformed_fields_are_named(request_: dict[str, Any], message: str) -> None:
    error = _bad(request_)
    assert error.request_id == request_["id"]
    assert message in error.message


@pytest.mark.parametrize(
    "data",
    [b"[]", b'{"ok": true}', b'{"id": 1, "ok": "yes"}', b'{"id": 1, "ok": false, "code": 5}'],
)
def test_malformed_replies_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="malformed"):
        messages.decode_reply(data)
