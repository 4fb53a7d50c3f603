"""A real Prometheus server (Debian's ``prometheus``, installed by ``make system-deps``) on a
loopback port, scraping one target (and evaluating rule files) with a config written here, its
storage in a temporary folder; stopped by PID."""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support import tools
from tests.support.listening import port_of
from tests.support.waits import until

START_TIMEOUT_S = 60.0
POLL_S = 0.2
"""Prometheus cannot notify: its HTTP API is polled (bounded) for what a test waits on."""


class Prometheus:
    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.url = url
        self.process = process
        self.log = log

    def get(self, path: str, **params: str) -> dict[str, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as response:
            body: dict[str, Any] = json.loads(response.read())
            return body

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector ``promql`` evaluates to now."""
        body = self.get("/api/v1/query", query=promql)
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_for(self, promql: str, done: Callable[[list[dict[str, Any]]], bool]) -> list[Any]:
        """Poll ``promql`` until ``done(result)`` (bounded by START_TIMEOUT_S)."""
        results: list[list[dict[str, Any]]] = []

        def satisfied() -> bool:
            results.append(self.query(promql))
            return done(results[-1])

        until(
            satisfied,
            lambda: f"{promql} satisfying the test; last {results[-1]}\n{self.logs()}",
            START_TIMEOUT_S,
            poll_s=POLL_S,
        )
        return results[-1]

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@contextlib.contextmanager
def running_prometheus(
    target: str,
    metrics_path: str,
    workdir: Path,
    *,
    interval: str = "200ms",
    rule_files: Sequence[Path] = (),
    labels: Mapping[str, str] | None = None,
) -> Iterator[Prometheus]:
    """Prometheus scraping ``target`` (host:port) at ``metrics_path`` every ``interval`` (its
    scrape timeout too), evaluating ``rule_files`` as often, the target's series labelled with
    ``labels`` (as a Kubernetes scrape job labels a pod's: ``namespace``, ``pod``)."""
    executable = tools.executable("prometheus")
    config = workdir / "prometheus.yml"
    settings = {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": interval,
            "evaluation_interval": interval,
        },
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": [
            {
                "job_name": "tensorgate",
                "metrics_path": metrics_path,
                "static_configs": [{"targets": [target], "labels": dict(labels or {})}],
            }
        ],
    }
    config.write_text(json.dumps(settings))  # YAML is a superset of JSON
    log = workdir / "prometheus.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                executable,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                "--web.listen-address=127.0.0.1:0",
                "--log.level=warn",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = Prometheus("http://127.0.0.1", process, log)
    try:
        server.url = f"{server.url}:{port_of(process, f'prometheus (log: {log})')}"
        _wait_ready(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(server: Prometheus) -> None:
    def ready() -> bool:
        if server.process.poll() is not None:
            raise AssertionError(f"prometheus exited: {server.logs()}")
        with (
            contextlib.suppress(urllib.error.URLError, ConnectionError),
            urllib.request.urlopen(f"{server.url}/-/ready", timeout=5) as response,
        ):
            return bool(response.status == 200)
        return False

    until(ready, lambda: f"prometheus ready: {server.logs()}", START_TIMEOUT_S, poll_s=POLL_S)
