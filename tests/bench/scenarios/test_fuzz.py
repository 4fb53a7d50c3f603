"""bench.scenarios.fuzz: hostile input reproducible from a seed, and the run's summary."""

from __future__ import annotations

from typing import Any

from bench.load.calls import PREDICT_METHOD
from bench.scenarios.fuzz import METHODS, Fuzzer, summary_text
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
        "gateway_alive": True,
        "good_request_ok_after": True,
        "gateway_rss_mb_after": 80.25,
        "log_bytes": 1000,
    }
    text = summary_text(report)
    assert text.splitlines()[0] == "fuzzed 12 requests in 0.5 min: FINDINGS"
    assert "        10  grpc INVALID_ARGUMENT" in text
    assert "RSS 80.2 MB" in text and text.endswith("bad answers: {'rest 500': 2}\n")
    clean = {**report, "ok": True, "bad": {}}
    assert "no finding" in summary_text(clean) and "bad answers" not in summary_text(clean)
