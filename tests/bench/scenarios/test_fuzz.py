"""bench.scenarios.fuzz: hostile input reproducible from a seed, and the run's summary."""

from __future__ import annotations

from typing import Any

import grpc

from bench.load.calls import PREDICT_METHOD
from bench.scenarios import fuzz_v2
from bench.scenarios.fuzz import METHODS, Fuzzer, summary_text
from bench.scenarios.fuzz_v2 import V2Fuzzer
from gateway._pb.tensorflow_serving.apis import predict_pb2

SERVICE = "/tensorflow.serving.PredictionService/"


def test_one_seed_gives_one_sequence_of_inputs() -> None:
    def draws(seed: int) -> list[Any]:
        fuzzer = Fuzzer(seed)
        return [(fuzzer.grpc_call(), fuzzer.rest_body(), fuzzer.raw_http()) for _ in range(20)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def test_grpc_calls_go_to_prediction_service_methods_and_structured_ones_parse() -> None:
    fuzzer = Fuzzer(0)
    paths = set()
    for _ in range(300):
        path, _data = fuzzer.grpc_call()
        paths.add(path)
        assert path == PREDICT_METHOD or path.removeprefix(SERVICE) in METHODS
    assert PREDICT_METHOD in paths and len(paths) > 1
    request = predict_pb2.PredictRequest.FromString(fuzzer.predict())
    assert len(request.inputs) <= 2


def test_raw_http_is_a_request_line_then_junk() -> None:
    fuzzer = Fuzzer(1)
    for _ in range(50):
        line = fuzzer.raw_http().split(b"\r\n", 1)[0]
        method, _path, version = line.split(b" ")
        assert method.isalpha() and version in (b"HTTP/1.0", b"HTTP/1.1")


def test_summary_counts_by_status_and_says_whether_anything_was_found() -> None:
    report = {
        "requests": 12,
        "minutes": 0.5,
        "ok": False,
        "by_status": {"grpc INVALID_ARGUMENT": 10, "rest 500": 2},
        "bad": {"rest 500": 2},
        "hangs": {"v2rest no answer (TimeoutError)": 1},
        "gateway_alive": True,
        "good_request_ok_after": True,
        "gateway_rss_mb_start": 80.25,
        "gateway_rss_mb_peak": 99.0,
        "gateway_rss_mb_after": 90.0,
        "log_bytes": 1000,
        "slow_bodies": {"rss_peak_mb": 300.0},
        "neighbours": {"valid_failed": 0},
    }
    text = summary_text(report)
    assert text.splitlines()[0] == "fuzzed 12 requests in 0.5 min: FINDINGS"
    assert "        10  grpc INVALID_ARGUMENT" in text
    assert "hangs: 1, RSS of its processes 80.2 MB at start, 99.0 MB at most" in text
    assert "batch neighbours: {'valid_failed': 0}" in text
    assert text.endswith("bad answers: {'rest 500': 2}\n")
    clean = {**report, "ok": True, "bad": {}}
    assert "no finding" in summary_text(clean) and "bad answers" not in summary_text(clean)


def test_v2_calls_are_reproducible_and_cover_both_wire_forms_and_issue_35_s_cases() -> None:
    def draws(seed: int) -> list[Any]:
        fuzzer = V2Fuzzer(seed)
        return [(fuzzer.rest_call(), fuzzer.grpc_call()) for _ in range(20)]

    assert draws(3) == draws(3) and draws(3) != draws(4)
    fuzzer = V2Fuzzer(0)
    rest = [fuzzer.rest_call() for _ in range(400)]
    assert {call[0] for call in rest} == {"GET", "POST"}
    assert any("Inference-Header-Content-Length" in call[3] for call in rest)
    assert sum(call in fuzz_v2.HOSTILE for call in rest) > 20
    methods = {fuzzer.grpc_call()[0] for _ in range(300)}
    assert fuzz_v2.INFER_METHOD in methods and len(methods) > 3
    typed = fuzzer.infer()
    assert typed.inputs and typed.model_name in ("mlp", "nope")


def test_a_client_deadline_is_a_hang_and_the_server_s_is_an_answer() -> None:
    class Error(grpc.RpcError):  # grpc is untyped
        def __init__(self, details: str) -> None:
            self._details = details

        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.DEADLINE_EXCEEDED

        def details(self) -> str:
            return self._details

    assert fuzz_v2.grpc_key("v2grpc", Error("Deadline Exceeded")) == (
        "v2grpc no answer (client deadline)"
    )
    assert fuzz_v2.grpc_key(
        "grpc", Error("Deadline exceeded while waiting in the batch queue")
    ) == ("grpc DEADLINE_EXCEEDED")
