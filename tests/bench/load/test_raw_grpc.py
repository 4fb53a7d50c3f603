"""bench.load.raw_grpc against a real tensorgate: calls answered as grpc's own client sees them,
an answer held unsent while the window stays shut, a health Watch held open."""

from __future__ import annotations

import numpy as np

from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.load.raw_grpc import RawGrpc, Stream, grpc_message
from bench.systems.models import sample_input
from bench.systems.targets import Running
from tests.support import waits

WATCH = "/grpc.health.v1.Health/Watch"


def _port(gateway: Running) -> int:
    return int(gateway.target.address.rsplit(":", 1)[1])


def _until_ended(conn: RawGrpc, stream_id: int) -> Stream:
    waits.until(lambda: not conn.pump() or conn.streams[stream_id].ended, "the call's end")
    return conn.streams[stream_id]


def test_a_call_is_answered_with_its_status_and_bytes(gateway: Running) -> None:
    conn = RawGrpc(_port(gateway))
    try:
        ok = conn.call(PREDICT_METHOD, predict_payload("mlp", {"x": sample_input("mlp")}))
        missing = conn.call(PREDICT_METHOD, predict_payload("nope", {"x": sample_input("mlp")}))
        assert _until_ended(conn, ok).state == "OK"
        assert conn.streams[ok].answer_bytes > 40  # ten float probabilities and their framing
        assert _until_ended(conn, missing).state == "NOT_FOUND"
    finally:
        conn.close()
    assert conn.closed


def test_a_shut_window_holds_the_answer_unsent(gateway: Running) -> None:
    conn = RawGrpc(_port(gateway), window=0)
    try:
        stream_id = conn.call(PREDICT_METHOD, predict_payload("mlp", {"x": sample_input("mlp")}))
        stream = conn.wait(stream_id, timeout_s=waits.WAIT_S)
        assert stream.state == "held"  # headers in, the answer's bytes not
        assert stream.headers[":status"] == "200" and stream.answer_bytes == 0
        conn.open_window(stream_id, 1 << 16)
        assert _until_ended(conn, stream_id).state == "OK"
    finally:
        conn.close()


def test_a_health_watch_stays_open(gateway: Running) -> None:
    conn = RawGrpc(_port(gateway))
    try:
        stream_id = conn.call(WATCH, b"")
        waits.until(
            lambda: conn.pump() and conn.streams[stream_id].answer_bytes > 0, "the first status"
        )
        assert conn.streams[stream_id].state == "held" and not conn.closed
    finally:
        conn.close()


def test_messages_are_length_prefixed() -> None:
    assert grpc_message(b"abc") == b"\x00\x00\x00\x00\x03abc"
    assert grpc_message(b"") == bytes(5)
    assert np.frombuffer(grpc_message(b"\x01" * 300)[1:5], ">u4")[0] == 300
