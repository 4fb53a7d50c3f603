"""bench.load.ghz_options: ghz's command line → the load run it asks for, and the -O report text."""

from __future__ import annotations

import argparse
import json

import pytest

from bench.load.ghz_options import add_arguments, load_options, report_text
from bench.load.loadgen import StepSchedule

PREDICT = "tensorflow.serving.PredictionService.Predict"


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_ghz_defaults_send_200_predict_calls_over_one_grpc_connection() -> None:
    options = load_options(parse("127.0.0.1:8500"), lambda: b"request")
    assert options.target == "127.0.0.1:8500"
    assert options.method == "/tensorflow.serving.PredictionService/Predict"
    assert options.payload == b"request"
    assert (options.transport, options.concurrency, options.total) == ("grpc", 50, 200)
    assert (options.duration_s, options.rps, options.connections) == (0.0, 0.0, 1)
    assert options.timeout_s == 20.0
    assert options.schedule is None and options.cpus == () and options.metadata == ()
    assert options.extra == {"name": PREDICT}


def test_a_duration_replaces_the_total_and_go_durations_are_read() -> None:
    args = parse("h:1", "-n", "50", "-z", "1m30s", "--warmup", "500ms", "-t", "2s", "-r", "300")
    options = load_options(args, lambda: b"")
    assert (options.total, options.duration_s, options.warmup_s) == (0, 90.0, 0.5)
    assert (options.timeout_s, options.rps) == (2.0, 300.0)
    assert load_options(parse("h:1", "-n", "50"), lambda: b"").total == 50


def test_step_schedule_metadata_pinning_and_processes() -> None:
    args = parse(
        "h:1",
        "--concurrency-schedule=step",
        "--concurrency-start=2",
        "--concurrency-step=3",
        "--concurrency-step-duration=250ms",
        "--concurrency-end=11",
        "-m",
        '{"authorization": "Bearer t"}',
        "--cpus",
        "0,1",
        "--processes",
        "2",
    )
    options = load_options(args, lambda: b"")
    assert options.schedule == StepSchedule(2, 3, 0.25, 11)
    assert options.metadata == (("authorization", "Bearer t"),)
    assert (options.cpus, options.processes) == ((0, 1), 2)


def test_rest_posts_to_the_call_path_with_the_body_type() -> None:
    args = parse("http://127.0.0.1:8501", "--rest", "--call", "/v1/models/m:predict")
    options = load_options(args, lambda: b"{}")
    assert (options.transport, options.method) == ("http", "/v1/models/m:predict")
    assert options.content_type == "application/json"


def test_bad_durations_and_call_names_are_refused_before_the_request_is_built() -> None:
    built: list[bool] = []

    def payload() -> bytes:
        built.append(True)
        return b""

    with pytest.raises(ValueError, match="bad duration"):
        load_options(parse("h:1", "-z", "ten"), payload)
    with pytest.raises(ValueError, match=r"package\.Service\.Method"):
        load_options(parse("h:1", "--call", "Predict"), payload)
    assert built == []


def test_report_text_is_the_summary_or_json() -> None:
    report = {"count": 1}
    assert report_text(report, "json") == '{"count": 1}\n'
    assert json.loads(report_text(report, "pretty")) == report
    assert report_text(report, "pretty").startswith('{\n  "count"')
