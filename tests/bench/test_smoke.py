"""A few-second smoke run of the bench harness against real processes.

A real tensorgate serving the bench MLP, the bare echo server, an in-process HTTP/1.1 server, the
Python load generator (closed loop, open loop, errors, the CLI) and the h2load driver when
installed. Asserts only on what was sent and received, never on speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.load.loadgen import LoadOptions, run_load
from bench.measure.points import Load, run_h2load, run_point
from bench.systems.catalog import CATALOG
from bench.systems.models import sample_input
from bench.systems.start import start
from bench.systems.targets import Context, Running
from tests.support import tools

REPO = Path(__file__).resolve().parents[2]


def _options(running: Running, **kw: object) -> LoadOptions:
    t = running.target
    base: dict[str, object] = {"target": t.address, "method": t.method, "payload": t.payload}
    base.update(kw)
    return LoadOptions(**base)  # type: ignore[arg-type]


def test_closed_loop_over_two_processes(gateway: Running) -> None:
    report = run_load(
        _options(gateway, concurrency=4, connections=2, processes=2, duration_s=1.0, warmup_s=0.2)
    )
    assert set(report["statusCodeDistribution"]) == {"OK"}
    assert report["count"] > 0 and report["rps"] > 0
    assert report["client"]["processes"] == 2 and report["client"]["cpu_s"] > 0
    assert 0 < report["fastest"] <= report["average"] <= report["slowest"]
    assert sum(b["count"] for b in report["histogram"]) == report["count"]
    assert report["timeline"]


def test_open_loop_sends_every_scheduled_request(gateway: Running) -> None:
    report = run_load(_options(gateway, rps=200, total=200, processes=2))
    assert report["statusCodeDistribution"] == {"OK": 200}
    assert report["sendLag"]["dropped"] == 0 and report["sendLag"]["max_ms"] >= 0


def test_errors_are_reported_with_their_status(gateway: Running) -> None:
    payload = predict_payload("no_such_model", {"x": sample_input("mlp")})
    report = run_load(_options(gateway, payload=payload, concurrency=2, total=10))
    assert report["statusCodeDistribution"] == {"NotFound": 10}
    [(message, count)] = report["errorDistribution"].items()
    assert count == 10 and "code = NotFound" in message
    assert report["latencyDistribution"] == []


def test_cli_writes_a_ghz_json_report(gateway: Running) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench", "load", "--model", "mlp", "-n", "40", "-c", "4",
         "-O", "json", gateway.target.address],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=True,
    )  # fmt: skip
    report = json.loads(out.stdout)
    assert report["count"] == 40
    assert report["statusCodeDistribution"] == {"OK": 40}
    assert report["options"]["call"] == PREDICT_METHOD


def test_run_point_records_server_cpu(context: Context) -> None:
    echo = start(context, CATALOG["echo"], "mlp", ())
    try:
        result = run_point(echo, Load(2, 0.5, 0.2, driver="python"), ())
    finally:
        echo.stop()
    assert result["rps"] > 0 and result["errors"] == 0
    assert result["server_cpu_cores"] > 0


def test_h2load_driver(gateway: Running) -> None:
    tools.executable("h2load", "`make system-deps` installs nghttp2-client")
    result = run_h2load(gateway.target, Load(8, 0.5, 0.2, driver="h2load"), ())
    assert result["rps"] > 0 and result["errors"] == 0
    assert result["p50_ms"] > 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        status = 200 if body == b"ok" else 503
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_http_transport() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        ok = run_load(LoadOptions(base, "/p", b"ok", transport="http", concurrency=2, total=20))
        bad = run_load(LoadOptions(base, "/p", b"no", transport="http", concurrency=2, total=5))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert ok["statusCodeDistribution"] == {"OK": 20}
    assert bad["statusCodeDistribution"] == {"HTTP 503": 5}
