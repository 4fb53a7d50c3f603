"""Python calls per request: how long the request path is, counted exactly, process by process.

A server is started with :mod:`bench.measure.pycalls_site` leading its ``PYTHONPATH``; after a
warm-up, every process of its tree starts counting Python function calls on its main thread
(SIGUSR1), h2load sends exactly ``requests`` calls, and each process writes what it counted
(SIGUSR2). Calls per request are reported per role (front end or one-process gateway, worker)
and split into the project's own code (``gateway``, ``channel``, ``workers``) and the rest
(grpc's Python, asyncio, numpy's Python wrappers). Counts do not depend on the
machine's speed or load, unlike times: the same code path gives the same figure on any day.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.load import h2load
from bench.measure.points import grpc_layout
from bench.measure.usage import descendants, role_of
from bench.systems import start
from bench.systems.targets import Context, SystemSpec

SITE = Path(__file__).with_name("pycalls_site")
REPO = Path(__file__).resolve().parents[2]
OURS = tuple(str(REPO / pkg) + os.sep for pkg in ("gateway", "channel", "workers"))
WARMUP = 500
SETTLE_S = 0.3
"""Seconds for every process to take a signal before the next step."""


def count(
    ctx: Context,
    spec: SystemSpec,
    model: str,
    *,
    requests: int = 2000,
    concurrency: int = 16,
) -> dict[str, Any]:
    """Calls per request of ``spec`` serving ``model`` under h2load at ``concurrency``:
    ``{role: {"ours": ..., "other": ..., "top": [[file, per request], ...]}}``."""
    with tempfile.TemporaryDirectory(prefix="tg-pycalls-") as out:
        env = {
            **spec.params.get("env", {}),
            "PYTHONPATH": f"{SITE}{os.pathsep}{REPO}",
            "TENSORGATE_BENCH_PYCALLS": out,
        }
        spec = SystemSpec(spec.name, spec.kind, {**spec.params, "env": env})
        running = start.start(ctx, spec, model, ())
        try:
            target = running.target
            _send(target, WARMUP, concurrency)
            pids = descendants(running.server.pid)
            _signal(pids, signal.SIGUSR1)
            _send(target, requests, concurrency)
            _signal(pids, signal.SIGUSR2)
            found = {pid: Path(out, f"{pid}.json") for pid in pids}
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not all(p.exists() for p in found.values()):
                time.sleep(0.05)
            roles = {pid: role_of(pid) for pid in pids}
            totals: dict[str, Counter[str]] = {}
            for pid, path in found.items():
                if path.exists():
                    calls = json.loads(path.read_text())["calls"]
                    totals.setdefault(roles[pid], Counter()).update(calls)
        finally:
            running.stop()
    return {role: _summary(calls, requests) for role, calls in totals.items()}


def _summary(calls: Counter[str], requests: int) -> dict[str, Any]:
    ours = sum(n for f, n in calls.items() if f.startswith(OURS))
    other = sum(calls.values()) - ours
    top = [[_short(f), round(n / requests, 2)] for f, n in calls.most_common() if n >= requests / 2]
    return {"ours": round(ours / requests, 1), "other": round(other / requests, 1), "top": top}


def _short(path: str) -> str:
    return path[len(str(REPO)) + 1 :] if path.startswith(str(REPO)) else path.rsplit("/", 3)[-1]


def _send(target: Any, total: int, concurrency: int) -> None:
    http = target.transport == "http"
    connections, streams = (concurrency, 1) if http else grpc_layout(concurrency)
    run = h2load.H2loadRun(
        url=target.url,
        body=target.h2_body,
        connections=connections,
        streams=streams,
        total=total,
        warmup_s=0,
        h1=http,
        headers=target.h2load_headers,
    )
    result = h2load.run(run)
    if result.get("succeeded", total) < total:
        raise RuntimeError(f"h2load: {result.get('succeeded')} of {total} calls succeeded")


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            continue
    time.sleep(SETTLE_S)


def table(found: dict[str, dict[str, Any]]) -> str:
    """Markdown: Python calls per request of each system, by role (the project's own code, and
    everything else)."""
    lines = [
        "| system | role | ours per request | other Python per request |",
        "|---|---|---|---|",
    ]
    for name, roles in found.items():
        for role, counts in sorted(roles.items()):
            lines.append(f"| {name} | {role} | {counts['ours']} | {counts['other']} |")
    return "\n".join(lines)
