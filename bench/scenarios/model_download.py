"""``python -m bench model-download``: the bench's ResNet50 (98 MB of ONNX) from a local S3 server.

An S3 server (moto in server mode, on loopback) holds ``s3://models/resnet50/1/``. In rounds,
each measured once per round in turn:

- ``boto3``: tensorgate's own path, a cold download into an empty cache
  (:meth:`gateway.storage.cache.VersionCache.fetch` over :class:`gateway.storage.s3.S3Store`:
  listing-checked, written to a temporary folder, flushed, renamed);
- ``obstore``: the alternative client (Rust's ``object_store``), the same objects streamed to
  files;
- ``start, cold cache`` and ``start, warm cache``: a gateway started with
  ``--model_base_path=s3://models/resnet50`` until it reports ready (``--ready_fd``), with an
  empty cache and with the cache the previous start filled (a restart: no download).

Seconds, median with min–max over the rounds; ``results.json`` and ``README.md`` in
``bench/results/<date>-model-download/``. The S3 server is Python (werkzeug), so the download
figures bound what a client gains from the server's side too: compare them with each other.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.measure.points import stats
from bench.scenarios.runner import CACHE, run_header
from bench.systems.listening import listening_ports
from gateway.lifecycle import wait_ready
from gateway.storage.cache import VersionCache, VersionFile
from gateway.storage.s3 import S3Store
from gateway.storage.urls import ObjectUrl

log = logging.getLogger(__name__)

MODEL = CACHE / "models" / "resnet50"
BUCKET = "models"
KEY = "resnet50"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}
START_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class DownloadPlan:
    rounds: int = 5


def run(plan: DownloadPlan, out: Path) -> dict[str, Any]:
    """Measure as the module doc says; write and return the results."""
    if not (MODEL / "1" / "model.onnx").exists():
        raise FileNotFoundError(f"{MODEL} is missing: run `python -m bench models` first")
    work = Path(tempfile.mkdtemp(prefix="bench-model-download-"))
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port = _port_of(server.pid)
        env = {
            **os.environ,
            **CREDENTIALS,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        }
        model_bytes = _upload(env)
        series: dict[str, list[float]] = {
            "boto3": [],
            "obstore": [],
            "start, cold cache": [],
            "start, warm cache": [],
        }
        for round_ in range(plan.rounds):
            log.info("round %d of %d", round_ + 1, plan.rounds)
            series["boto3"].append(_boto3(env, work / f"boto3-{round_}"))
            series["obstore"].append(_obstore(port, work / f"obstore-{round_}"))
            cache = work / f"cache-{round_}"
            series["start, cold cache"].append(_start(env, cache, work))
            series["start, warm cache"].append(_start(env, cache, work))
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    results = {
        **run_header("model-download", plan),
        "kind": "model-download",
        "model_bytes": model_bytes,
        "libraries": {n: version(n) for n in ("boto3", "botocore", "obstore", "moto")},
        "seconds": {name: stats(values) for name, values in series.items()},
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / "README.md").write_text(report(results))
    return results


def report(results: dict[str, Any]) -> str:
    """The Markdown table of ``results``."""
    mb = results["model_bytes"] / 1e6
    lines = [
        "# ResNet50 from a local S3 server",
        "",
        f"{mb:.1f} MB (`bench/.cache/models/resnet50/1/model.onnx`) from moto on loopback; "
        f"seconds, median (min–max) over {results['plan']['rounds']} rounds.",
        "",
        "| what | seconds | MB/s |",
        "|---|---|---|",
    ]
    for name, s in results["seconds"].items():
        rate = f"{mb / s['median']:.0f}" if name in ("boto3", "obstore") and s["median"] else ""
        lines.append(f"| {name} | {s['median']:.2f} ({s['min']:.2f}–{s['max']:.2f}) | {rate} |")
    libraries = ", ".join(f"{n} {v}" for n, v in results["libraries"].items())
    return "\n".join([*lines, "", f"Libraries: {libraries}.", ""])


def _port_of(pid: int) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ports = listening_ports(pid)
        if ports:
            return min(ports)
        time.sleep(0.05)
    raise TimeoutError("the S3 server did not listen")


def _store(env: dict[str, str]) -> S3Store:
    saved = dict(os.environ)
    os.environ.update(env)  # boto3 reads its standard variables from the process environment
    try:
        return S3Store(ObjectUrl("s3", BUCKET), env)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _upload(env: dict[str, str]) -> int:
    import boto3

    client = boto3.session.Session(
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    ).client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    client.create_bucket(Bucket=BUCKET)
    total = 0
    for path in sorted(MODEL.rglob("*")):
        if path.is_file():
            key = f"{KEY}/{path.relative_to(MODEL).as_posix()}"
            client.upload_file(str(path), BUCKET, key)
            total += path.stat().st_size
    client.close()
    return total


def _timed(work: Callable[[], object]) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


def _boto3(env: dict[str, str], folder: Path) -> float:
    store = _store(env)
    objects = store.list(f"{KEY}/1/")
    files = [VersionFile(o.key[len(f"{KEY}/1/") :], o) for o in objects]
    cache = VersionCache(str(folder))
    model = ObjectUrl("s3", BUCKET, KEY)
    return _timed(lambda: cache.fetch(store, model, 1, files))


def _obstore(port: int, folder: Path) -> float:
    import obstore
    from obstore.store import S3Store as ObStore

    store = ObStore(
        BUCKET,
        endpoint=f"http://127.0.0.1:{port}",
        access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region="us-east-1",
        client_options={"allow_http": True},
    )

    def download() -> None:
        for page in obstore.list(store, prefix=f"{KEY}/1/"):
            for meta in page:
                path = folder / meta["path"]
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "wb") as out:
                    for chunk in obstore.get(store, meta["path"]).stream():
                        out.write(chunk)

    return _timed(download)


def _start(env: dict[str, str], cache: Path, work: Path) -> float:
    """Seconds from a gateway's start to its ``--ready_fd`` line, then stopped."""
    read_fd, write_fd = os.pipe()
    command = [
        sys.executable, "-m", "gateway", "--model_name=resnet50",
        f"--model_base_path=s3://{BUCKET}/{KEY}", f"--model_cache_dir={cache}",
        "--port=0", "--rest_api_port=0", "--frontends=1", "--workers=1",
        "--file_system_poll_wait_seconds=0", f"--ready_fd={write_fd}",
    ]  # fmt: skip
    began = time.perf_counter()
    with open(work / "gateway.log", "ab") as log_file:
        process = subprocess.Popen(
            command, env=env, pass_fds=(write_fd,), stdout=log_file, stderr=subprocess.STDOUT
        )
    os.close(write_fd)
    try:
        info = wait_ready(read_fd, START_TIMEOUT_S)
        took = time.perf_counter() - began
    finally:
        os.close(read_fd)
        process.terminate()
        stopper = threading.Thread(target=process.wait, args=(60,))
        stopper.start()
        stopper.join()
    if info is None:
        raise RuntimeError(f"the gateway did not start: see {work / 'gateway.log'}")
    return took
