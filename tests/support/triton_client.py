"""Run :mod:`tests.support.triton_client_script` (the official ``tritonclient``) in its own process.

``run_calls`` writes the plan and its input arrays, runs the script with this interpreter and
returns its results and output arrays; BYTES inputs may be given as object arrays of ``bytes``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tests.support.paths import SUPPORT

SCRIPT = SUPPORT / "triton_client_script.py"
TIMEOUT_S = 120.0


def plan_inputs(call_id: str, inputs: dict[str, tuple[str, np.ndarray]]) -> tuple[dict, dict]:
    """A call's ``inputs`` entry and the arrays it needs in inputs.npz: ``{name: (datatype,
    array)}``; object arrays travel inline as base64."""
    entry: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, (datatype, array) in inputs.items():
        if array.dtype == object:
            items = [base64.b64encode(bytes(v)).decode() for v in array.reshape(-1)]
            entry[name] = {"datatype": datatype, "b64": items, "shape": list(array.shape)}
        else:
            arrays[f"{call_id}.{name}"] = array
            entry[name] = {"datatype": datatype, "npz": f"{call_id}.{name}"}
    return entry, arrays


async def run_calls(
    grpc_target: str,
    http_target: str,
    calls: list[dict[str, Any]],
    arrays: dict[str, np.ndarray],
    workdir: Path,
    *,
    ca: str | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Run ``calls`` (see the script's docstring) without blocking the caller's event loop (the
    server under test may be running on it); return (results by call id, output arrays).
    ``ca``: a CA certificate file: both clients use TLS and trust it."""
    plan: dict[str, Any] = {"grpc": grpc_target, "http": http_target, "calls": calls}
    if ca is not None:
        plan["ca"] = ca
    _write_plan(plan, arrays, workdir)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        str(workdir / "plan.json"),
        str(workdir),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    if process.returncode != 0:
        raise AssertionError(f"triton_client_script failed:\n{stderr.decode()[-4000:]}")
    return _read_results(workdir)


def _write_plan(plan: dict[str, Any], arrays: dict[str, np.ndarray], workdir: Path) -> None:
    (workdir / "plan.json").write_text(json.dumps(plan))
    np.savez(workdir / "inputs.npz", **arrays)  # type: ignore[arg-type]  # stub: as allow_pickle


def _read_results(workdir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    results = json.loads((workdir / "results.json").read_text())
    with np.load(workdir / "outputs.npz") as outputs:
        return results, {name: outputs[name] for name in outputs.files}
