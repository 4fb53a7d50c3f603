"""bench.load.h2load: frames, command line and parsing of h2load's output (no h2load needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.load import h2load

SUMMARY = "\n".join(
    [
        "finished in 3.00s, 4162.50 req/s, 1.46MB/s",
        "requests: 8325 total, 8325 started, 8325 done, 8320 succeeded, 5 failed, 0 errored, "
        "0 timeout",
        "status codes: 8320 2xx, 0 3xx, 0 4xx, 5 5xx",
        "traffic: 2.92MB (3063039) total, 36.83KB (37713) headers (space savings 96.28%), "
        "3.69MB (3868989) data",
        "time for request:      277us      8.80ms      1.92ms       243us    98.31%",
    ]
)


def test_grpc_frame_is_length_prefixed() -> None:
    assert h2load.grpc_frame(b"abc") == b"\x00\x00\x00\x00\x03abc"


def test_parse_output() -> None:
    out = h2load.parse_output(SUMMARY)
    assert out["rps"] == 4162.5 and out["elapsed_s"] == 3.0
    assert (out["done"], out["succeeded"], out["failed"]) == (8325, 8320, 5)
    assert out["http_5xx"] == 5
    assert out["bytes_data"] == 3868989


def test_parse_output_with_millisecond_runs_and_missing_summary() -> None:
    short = SUMMARY.replace("finished in 3.00s", "finished in 33.35ms")
    assert h2load.parse_output(short)["elapsed_s"] == pytest.approx(0.03335)
    with pytest.raises(ValueError, match="no summary"):
        h2load.parse_output("connect failed")


def test_parse_log_keeps_2xx_latencies() -> None:
    log = "1795242832155711\t200\t2001\n1795242832155953\t200\t1819\n1795242832156220\t503\t9\n"
    hist = h2load.parse_log(log)
    assert hist.count == 2
    assert hist.max_ns == pytest.approx(2_001_000, rel=0.02)


def test_argv_duration_and_pinning() -> None:
    spec = h2load.H2loadRun(
        url="http://h/x",
        body=b"",
        connections=4,
        streams=16,
        duration_s=1.5,
        warmup_s=0.5,
        cpus=(0,),
    )
    argv = spec.argv(Path("/b"), Path("/l"))
    assert argv[:3] == ["taskset", "-c", "0"]
    assert "1500ms" in argv and "--warm-up-time=500ms" in argv
    assert argv[argv.index("-H") + 1] == "content-type: application/grpc"


def test_ok_fraction() -> None:
    assert h2load.ok_fraction({"bytes_data": 500, "done": 10}, 100.0) == 0.5
    assert h2load.ok_fraction({"done": 10}, 100.0) is None
