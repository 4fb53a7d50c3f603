"""The Triton and KServe peers start, answer one request with the model's own output, and stop.

Each configuration the bench drives (Triton over gRPC v2 and HTTP v2, KServe over gRPC v2 and v1
REST) is started the way ``python -m bench run`` starts it, in its own virtualenv
(``bench/.venvs``, built on first use: ``make test`` builds them first), serving the bench MLP.
The answer is compared with ONNX Runtime's own output for the same input. Skipped only when a
peer's virtualenv cannot be built on this machine (the reason is the skip message).
"""

from __future__ import annotations

import json
import os
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import onnxruntime as ort
import pytest

from bench.systems import venvs
from bench.systems.catalog import CATALOG
from bench.systems.models import INPUT_NAMES, sample_input
from bench.systems.procs import StartFailed
from bench.systems.start import start
from bench.systems.targets import Context, Running, Target

PEERS = ("triton", "triton-http", "kserve-grpc", "kserve-rest")
SHM_PREFIXES = ("pytrtion", "psm_")
"""Names PyTriton gives its shared-memory segments in /dev/shm (its own, and Python's)."""


def _expected(context: Context) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(context.model_file("mlp")), options)
    (out,) = session.run(None, {INPUT_NAMES["mlp"]: sample_input("mlp", context.batch)})
    return np.asarray(out, dtype=np.float32)


def _answer(target: Target) -> bytes:
    if target.transport == "grpc":
        with grpc.insecure_channel(target.address) as channel:
            call = channel.unary_unary(
                target.method, request_serializer=None, response_deserializer=None
            )
            return bytes(call(target.payload, timeout=30))
    request = urllib.request.Request(
        target.url, data=target.payload, method="POST", headers=dict(target.http_headers)
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert resp.status == 200
        return bytes(resp.read())


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _peer_shm() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith(SHM_PREFIXES)}


def _start_all(context: Context) -> dict[str, Running]:
    """Start every peer side by side; if one cannot start, stop the others and fail."""
    with ThreadPoolExecutor(len(PEERS)) as pool:
        futures = {n: pool.submit(start, context, CATALOG[n], "mlp", ()) for n in PEERS}
        outcomes = {n: f.exception() or f.result() for n, f in futures.items()}
    running = {n: r for n, r in outcomes.items() if isinstance(r, Running)}
    failed = {n: e for n, e in outcomes.items() if not isinstance(e, Running)}
    if failed:
        for r in running.values():
            r.stop()
        detail = "; ".join(
            f"{n}: {e}\n{e.log[-1500:] if isinstance(e, StartFailed) else ''}"
            for n, e in failed.items()
        )
        pytest.fail(f"peers did not start: {detail}")
    return running


def test_triton_and_kserve_start_answer_and_stop(context: Context) -> None:
    for venv in ("triton", "kserve"):
        python, reason = venvs.ensure(venv)
        if python is None:
            pytest.skip(f"the {venv} virtualenv cannot be built on this machine: {reason}")
    shm_before = _peer_shm()
    running = _start_all(context)
    try:
        answers = {n: _answer(r.target) for n, r in running.items()}
    finally:
        with ThreadPoolExecutor(len(running)) as pool:
            list(pool.map(Running.stop, running.values()))

    expected = _expected(context)
    raw = expected.tobytes()
    # gRPC v2: the output's bytes in raw_output_contents; Triton's HTTP v2 binary-tensor answer
    # ends with them; KServe's v1 REST answers JSON predictions.
    assert raw in answers["triton"], answers["triton"][:200]
    assert raw in answers["kserve-grpc"], answers["kserve-grpc"][:200]
    assert answers["triton-http"].endswith(raw), answers["triton-http"][:200]
    predictions = json.loads(answers["kserve-rest"])["predictions"]
    np.testing.assert_allclose(np.asarray(predictions, np.float32), expected, rtol=1e-6)

    still_running = [n for n, r in running.items() if _group_alive(r.server.pid)]
    assert still_running == []
    assert _peer_shm() - shm_before == set()
    left = [p for r in running.values() for p in r.server.remove_after if p.exists()]
    assert left == [], "a workspace was left behind"
