"""``seeds``: the load-testing seeds' experiment with their own tool, at this machine's scale.

Locust runs :mod:`bench.load.locustfile` headless (its own process, pinned to the client CPUs:
gevent patches whatever imports it) against ResNet50 on the two server cores, one run after the
other (a time series cannot interleave), each with the seeds' ramp: one user added a second up to
each of ``plan.seeds_users`` (below capacity, then above), each aiming at a request a second,
then ``plan.seeds_plateau_s`` at full strength.

Two tables:

- **JPEG** (what the seeds' users sent): one JPEG a request, in turn from a fixed set of
  photograph-like images (:mod:`bench.load.seed_images`: half at 224 × 224, half at 1000 × 750,
  which the server resizes), to tensorgate's TF Serving REST API as ``{"b64": ...}``
  (``tensorgate-2w-rest``), to the same gateway's V2 REST binary data extension, and to the
  seeds' FastAPI server (``fastapi-inline-2w``'s ``/image``: ``UploadFile``, PIL's decode and
  resize, the ONNX session in the endpoint);
- **float rows**: the decoded image as TF Serving's row format to tensorgate, and as raw float32
  bytes to the FastAPI server (``/inline``).

Per run: Locust's per-second history (users, requests/s, failures/s, latency percentiles, from
``--csv-full-history``), its totals, and the plateau's mean requests/s.
"""

from __future__ import annotations

import csv
import logging
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cpus import layouts, pinned
from bench.load import seed_images
from bench.scenarios.runner import Bench
from bench.systems.targets import Running

log = logging.getLogger(__name__)

LOCUSTFILE = Path(__file__).resolve().parent.parent / "load" / "locustfile.py"
MODEL = "resnet50"
TENSORGATE = "tensorgate-2w-rest"
FASTAPI = "fastapi-inline-2w"
SYSTEMS = (TENSORGATE, FASTAPI)
PERCENTILES = {"p50": "50%", "p95": "95%", "p99": "99%"}


@dataclass(frozen=True)
class Way:
    """One way of sending the seeds' request: to which system, with which Locust payload."""

    system: str
    payload: str
    """The Locust file's ``--payload``, or ``body`` (the target's own bytes, at its path)."""
    path: str = ""
    """Where to POST (""; the payload's own URL)."""


JPEG_WAYS = {
    "tensorgate TF Serving REST (b64)": Way(TENSORGATE, "tf-b64"),
    "tensorgate V2 REST (binary)": Way(TENSORGATE, "v2-binary"),
    "FastAPI (UploadFile, PIL)": Way(FASTAPI, "upload", "/image"),
}
ROW_WAYS = {
    "tensorgate TF Serving REST (float rows)": Way(TENSORGATE, "rows"),
    "FastAPI (raw float32)": Way(FASTAPI, "body"),
}
FASTAPI_JPEG = "FastAPI (UploadFile, PIL)"
FASTAPI_ROWS = "FastAPI (raw float32)"


def seeds(bench: Bench) -> None:
    plan = bench.plan
    server_cpus, client_cpus = layouts()["2-core"]
    section: dict[str, Any] = {
        "model": MODEL,
        "users": list(plan.seeds_users),
        "spawn_rate": 1,
        "plateau_s": plan.seeds_plateau_s,
        "images": {size: seed_images.PER_SIZE for size in seed_images.SIZES},
        "jpeg": {},
        "rows": {},
    }
    with (
        tempfile.TemporaryDirectory(prefix="bench-seed-images-") as folder,
        bench.systems(list(SYSTEMS), MODEL, server_cpus) as running,
    ):
        images = Path(folder)
        for size in seed_images.SIZES:
            seed_images.write(images, size)
        for table, ways, users_list in (
            ("jpeg", JPEG_WAYS, plan.seeds_users),
            ("rows", ROW_WAYS, plan.seeds_users[:1]),
        ):
            for users in users_list:
                runs = section[table].setdefault(str(users), {})
                for label, way in ways.items():
                    log.info("seeds: locust, %s, %d users", label, users)
                    runs[label] = run_locust(
                        running[way.system],
                        users,
                        plan.seeds_plateau_s,
                        client_cpus,
                        payload_args(way, running[way.system], images),
                    )
    bench.results["scenarios"]["seeds"] = section


def payload_args(way: Way, running: Running, images: Path) -> list[str]:
    """The Locust file's arguments for ``way`` against ``running`` (``body``: the target's own
    payload, written into the images' folder)."""
    if way.payload == "body":
        target = running.target
        body = images / f"{running.spec.name}.body"
        body.write_bytes(target.payload)
        return [
            "--body-file", str(body), "--content-type", target.content_type,
            "--path", way.path or target.method,
        ]  # fmt: skip
    args = ["--payload", way.payload, "--image-dir", str(images), "--model-name", MODEL]
    return [*args, "--path", way.path] if way.path else args


def run_locust(
    running: Running,
    users: int,
    plateau_s: int,
    client_cpus: tuple[int, ...],
    payload: Sequence[str] = (),
) -> dict[str, Any]:
    """One headless Locust run of the file's ramp (``users``, then ``plateau_s``) against
    ``running`` with the Locust file's ``payload`` arguments; its per-second timeline and
    totals."""
    with tempfile.TemporaryDirectory(prefix="bench-seeds-") as scratch:
        work = Path(scratch)
        argv = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
            "-H", running.target.address, "--ramp-users", str(users),
            "--plateau-s", str(plateau_s), "--stop-timeout", "10", "--csv", str(work / "run"),
            "--csv-full-history", "--only-summary", "--loglevel", "WARNING",
            "--exit-code-on-error", "0", *payload,
        ]  # fmt: skip
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
