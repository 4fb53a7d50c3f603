"""``seeds``: the load-testing seeds' experiment with their own tool, at this machine's scale.

Locust runs :mod:`bench.load.locustfile` headless (its own process, pinned to the client CPUs:
gevent patches whatever imports it) against tensorgate's TF Serving REST API
(``tensorgate-2w-rest``: ``/v1/models/resnet50:predict``, row format) and the seeds' FastAPI
server (``fastapi-inline-2w``: the model run in the ``async`` endpoint, the raw image as body),
both on the two cores, one after the other (a time series cannot interleave). The seeds' ramp: one
user added a second up to ``plan.seeds_users`` (the seeds: 150 on 8 nodes of 2 vCPU), each
aiming at a request a second, then ``plan.seeds_plateau_s`` at full strength (the file's load
shape, given ``--ramp-users`` and ``--plateau-s``).

Per system: Locust's per-second history (users, requests/s, failures/s, latency percentiles, from
``--csv-full-history``), its totals, and the plateau's mean requests/s.
"""

from __future__ import annotations

import csv
import logging
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.cpus import layouts, pinned
from bench.scenarios.runner import Bench
from bench.systems.catalog import CATALOG
from bench.systems.targets import Running

log = logging.getLogger(__name__)

LOCUSTFILE = Path(__file__).resolve().parent.parent / "load" / "locustfile.py"
SYSTEMS = ("tensorgate-2w-rest", "fastapi-inline-2w")
MODEL = "resnet50"
PERCENTILES = {"p50": "50%", "p95": "95%", "p99": "99%"}


def seeds(bench: Bench) -> None:
    plan = bench.plan
    server_cpus, client_cpus = layouts()["2-core"]
    section: dict[str, Any] = {
        "model": MODEL,
        "users": plan.seeds_users,
        "spawn_rate": 1,
        "plateau_s": plan.seeds_plateau_s,
        "systems": {},
    }
    with bench.systems(list(SYSTEMS), MODEL, server_cpus) as running:
        for name, r in running.items():
            log.info("seeds: locust against %s, %d users", name, plan.seeds_users)
            own = CATALOG[name].kind == "tensorgate"  # TF Serving's REST API
            section["systems"][name] = run_locust(
                r, plan.seeds_users, plan.seeds_plateau_s, client_cpus, own_body=own
            )
    bench.results["scenarios"]["seeds"] = section


def run_locust(
    running: Running,
    users: int,
    plateau_s: int,
    client_cpus: tuple[int, ...],
    *,
    own_body: bool,
) -> dict[str, Any]:
    """One headless Locust run of the file's ramp (``users``, then ``plateau_s``) against
    ``running``; its per-second timeline and totals.
    ``own_body``: the Locust file sends its own request (TF Serving's row format of the ResNet50
    input), else the target's payload."""
    target = running.target
    with tempfile.TemporaryDirectory(prefix="bench-seeds-") as scratch:
        work = Path(scratch)
        argv = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
            "-H", target.address, "--ramp-users", str(users), "--plateau-s", str(plateau_s),
            "--stop-timeout", "10", "--csv", str(work / "run"),
            "--csv-full-history", "--only-summary", "--loglevel", "WARNING",
            "--exit-code-on-error", "0", "--path", target.method,
        ]  # fmt: skip
        if not own_body:
            body = work / "body"
            body.write_bytes(target.payload)
            argv += ["--body-file", str(body), "--content-type", target.content_type]
        done = subprocess.run(
            pinned(argv, client_cpus),
            capture_output=True,
            text=True,
            timeout=users + plateau_s + 120,
            check=False,
        )
        if done.returncode != 0:
            return {"error": f"locust exited {done.returncode}: {done.stderr.strip()[-500:]}"}
        timeline = history(work / "run_stats_history.csv")
        totals = _aggregated(work / "run_stats.csv")
    plateau = [row["rps"] for row in timeline if row["users"] == users]
    return {
        "timeline": timeline,
        "requests": int(totals["Request Count"]),
        "failures": int(totals["Failure Count"]),
        "rps": float(totals["Requests/s"]),
        "plateau_rps": sum(plateau) / len(plateau) if plateau else 0.0,
        **{f"{p}_ms": _number(totals[column]) for p, column in PERCENTILES.items()},
    }


def history(path: Path) -> list[dict[str, float]]:
    """Locust's per-second rows of every request together (``Aggregated``), from ``t`` = 0."""
    rows = [r for r in _rows(path) if r["Name"] == "Aggregated"]
    if not rows:
        return []
    start = int(rows[0]["Timestamp"])
    return [
        {
            "t": int(r["Timestamp"]) - start,
            "users": int(r["User Count"]),
            "rps": float(r["Requests/s"]),
            "failures_per_s": float(r["Failures/s"]),
            **{f"{p}_ms": _number(r[column]) for p, column in PERCENTILES.items()},
        }
        for r in rows
    ]


def _aggregated(path: Path) -> dict[str, str]:
    (row,) = [r for r in _rows(path) if r["Name"] == "Aggregated"]
    return row


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _number(text: str) -> float:
    """A Locust CSV figure; ``N/A`` (no request finished in that second) is NaN."""
    return float("nan") if text in ("", "N/A") else float(text)
