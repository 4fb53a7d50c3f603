"""One log format for the gateway and its workers: text by default, JSON with --log_format=json;
one line per start step."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from tests.support.gateway_proc import GatewayProcess, running_gateway, worker_pids

TEXT_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [DIWEC] \d+ (gateway|worker-\d+) [\w.]+\] \S"
)


def test_every_line_of_the_shared_gateway_is_in_the_text_format(gateway: GatewayProcess) -> None:
    lines = gateway.log().splitlines()
    assert lines and all(TEXT_LINE.match(line) for line in lines), lines


def test_json_lines_from_gateway_and_workers_one_per_start_step(
    model_repo: Path, tmp_path: Path
) -> None:
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=2",
        "--rest_api_port=-1",
        "--log_format=json",
    ]
    with running_gateway(args, tmp_path) as gateway:
        workers = set(worker_pids(gateway.pid))
        gateway_pid = gateway.pid
    entries = [json.loads(line) for line in gateway.log().splitlines()]
    assert all(set(e) >= {"time", "level", "pid", "process", "logger", "message"} for e in entries)
    by_process = {e["process"]: e["pid"] for e in entries}
    assert by_process["gateway"] == gateway_pid
    assert {by_process["worker-0"], by_process["worker-1"]} == workers
    steps = Counter(
        step
        for e in entries
        for step in (
            "worker 0 ready",
            "worker 1 ready",
            "serving mlp version 2",
            "Observability:",
            "Running gRPC ModelServer",
            "Exporting HTTP/REST API",
            "tensorgate stopped",
        )
        if e["message"].startswith(step)
    )
    assert set(steps.values()) == {1}, steps
    loads = [e for e in entries if e["message"].startswith("loaded mlp:2")]
    assert sorted(e["process"] for e in loads) == ["worker-0", "worker-1"]
