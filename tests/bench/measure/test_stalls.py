"""bench.measure.stalls: bystanders' calls, what a window of them says, hostile calls timed."""

from __future__ import annotations

from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.measure.stalls import (
    Bystander,
    Bystanders,
    Timed,
    grpc_caller,
    http_caller,
    longest_ms,
    summary,
    timed_calls,
)
from bench.systems.models import sample_input
from bench.systems.targets import Running
from tests.support import waits


def test_a_window_keeps_the_calls_that_overlap_it() -> None:
    bystander = Bystander("b", lambda: "OK")
    bystander.calls = [
        Timed(0.0, 0.5, "OK"),  # ends before the window
        Timed(0.5, 1.0, "OK"),  # runs into it: the wait the window caused
        Timed(1.6, 0.001, "UNAVAILABLE"),
        Timed(3.0, 0.1, "OK"),  # after it
    ]
    window = Bystanders([bystander]).window(1.0, 2.0)
    assert window == {
        "b": {
            "calls": 2,
            "statuses": {"OK": 1, "UNAVAILABLE": 1},
            "median_ms": 500.5,
            "p99_ms": 1000.0,
            "max_ms": 1000.0,
        }
    }
    assert longest_ms(window) == 1000.0
    bystander.in_flight = 1.5  # a call still waiting counts, timed until now
    held = Bystanders([bystander]).window(1.0, 2.0)["b"]
    assert held["calls"] == 3 and held["statuses"]["in flight"] == 1
    assert held["max_ms"] > 1000.0
    assert summary([]) == {"calls": 0, "statuses": {}}
    assert longest_ms({"b": summary([])}) is None


def test_callers_answer_each_call_s_status(gateway: Running, rest_gateway: Running) -> None:
    target = gateway.target.address
    request = predict_payload("mlp", {"x": sample_input("mlp")})
    good, close = grpc_caller(target, PREDICT_METHOD, request, connections=2)
    missing, close_missing = grpc_caller(
        target, PREDICT_METHOD, predict_payload("nope", {"x": sample_input("mlp")})
    )
    port = int(rest_gateway.target.address.rsplit(":", 1)[1])
    healthz, close_http = http_caller(port, "/healthz", connections=2)
    nowhere, close_nowhere = http_caller(port, "/nowhere")
    try:
        assert [good(), good(), missing()] == ["OK", "OK", "NOT_FOUND"]
        assert [healthz(), healthz(), nowhere()] == ["200", "200", "404"]
    finally:
        for done in (close, close_missing, close_http, close_nowhere):
            done()


def test_bystanders_call_back_to_back_until_stopped(gateway: Running) -> None:
    call, close = grpc_caller(
        gateway.target.address, PREDICT_METHOD, predict_payload("mlp", {"x": sample_input("mlp")})
    )
    bystander = Bystander("predict", call, close)
    with Bystanders([bystander]):
        waits.until(lambda: len(bystander.calls) >= 3, "three bystander calls")
    made = len(bystander.calls)
    assert {c.status for c in bystander.calls} == {"OK"}
    starts = [c.started for c in bystander.calls]
    assert starts == sorted(starts) and all(c.seconds > 0 for c in bystander.calls)
    assert len(bystander.calls) == made  # stopped


def test_hostile_calls_are_timed_in_order_however_many_at_once() -> None:
    calls = [lambda s=s: s for s in "ABCD"]
    assert [t.status for t in timed_calls(calls, at_once=2)] == list("ABCD")
    assert [t.status for t in timed_calls(calls)] == list("ABCD")
