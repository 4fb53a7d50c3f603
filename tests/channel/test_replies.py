"""The replies' constructors build exactly the documented messages, and a worker's failures
become error replies."""

from __future__ import annotations

from typing import Any

from channel.descriptors import TensorDesc
from channel.replies import (
    READY_ID,
    BadRequest,
    RunReply,
    WorkerError,
    error_reply,
    load_reply,
    ok_reply,
    ping_reply,
    ready,
    run_reply,
)
from channel.span_wire import WorkerSpans
from tests.channel.samples import STATS

Y = TensorDesc("y", "float32", (8, 10), 0, 320)


def test_ready_is_the_message_with_id_zero() -> None:
    assert READY_ID == 0
    assert ready(1234) == {"id": 0, "ok": True, "op": "ready", "pid": 1234}


def test_ok_and_load_replies() -> None:
    assert ok_reply(3) == {"id": 3, "ok": True}
    signature: dict[str, Any] = {"inputs": [], "outputs": []}
    reply = load_reply(1, signature)
    assert reply == {"id": 1, "ok": True, "signature": signature}
    assert reply["signature"] is not signature  # a copy: the worker's table stays its own


def test_run_reply_carries_spans_only_when_traced() -> None:
    untraced = run_reply(4, outputs=[Y], out_end=8192, compute_us=81.2)
    assert untraced == RunReply(id=4, outputs=(Y,), out_end=8192, compute_us=81.2, spans=None)
    spans = WorkerSpans(0, b"")
    assert run_reply(4, outputs=[], out_end=0, compute_us=1.0, spans=spans).spans is spans


def test_ping_reply_reports_runs_and_stats_only_when_given() -> None:
    assert ping_reply(6, 1234) == {"id": 6, "ok": True, "pid": 1234}
    reply = ping_reply(7, 1234, runs=6, stats=STATS)
    assert (reply["runs"], reply["stats"]) == (6, STATS)


def test_error_reply_carries_out_end_only_for_a_run() -> None:
    assert error_reply(1, "INTERNAL", "x") == {
        "id": 1,
        "ok": False,
        "code": "INTERNAL",
        "message": "x",
    }
    assert error_reply(9, "DEADLINE_EXCEEDED", "late", out_end=8192)["out_end"] == 8192


def test_worker_errors_become_error_replies() -> None:
    error = WorkerError("RESOURCE_EXHAUSTED", "arena full")
    assert str(error) == "RESOURCE_EXHAUSTED: arena full"
    assert error.reply(3, out_end=640) == {
        "id": 3,
        "ok": False,
        "code": "RESOURCE_EXHAUSTED",
        "message": "arena full",
        "out_end": 640,
    }


def test_a_bad_request_is_invalid_and_keeps_the_id_it_could_read() -> None:
    error = BadRequest(-1, "request is not JSON")
    assert isinstance(error, WorkerError)
    assert (error.code, error.request_id) == ("INVALID_ARGUMENT", -1)
    assert error.reply(error.request_id)["message"] == "request is not JSON"
