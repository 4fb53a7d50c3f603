"""The base install (``pip install tensorgate``, ``make serve``, the default image) is enough to
serve ONNX: a real gateway and its workers serving the demo model import only the standard
library, this project, and distributions that ``pyproject.toml``'s base dependencies pull in —
never TensorFlow, matplotlib, FastAPI, scikit-learn, onnx or the dev tools. Every import of both
processes is seen with ``PYTHONPROFILEIMPORTTIME`` (``-X importtime``, inherited by the workers)."""

from __future__ import annotations

import importlib.metadata
import re
import signal
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement

from gateway.client import Client
from tests.support.gateway_proc import start_gateway
from tests.support.paths import REPO_ROOT

NEVER = {
    "tensorflow",
    "openvino",
    "matplotlib",
    "fastapi",
    "uvicorn",
    "sklearn",
    "onnx",
    "skl2onnx",
    "pytest",
}
OPTIONAL = {
    "grpc_tools": "grpcio imports it when present (grpc.protos()), goes on without",
    "_distutils_hack": "setuptools' .pth start-up hook, in any virtualenv with setuptools",
    "psutil": "opentelemetry-sdk's resource detection reads the process with it when present "
    "(locust, a bench dependency, pulls it in)",
}
"""Imported here because the dev environment has them; the base install works without."""
IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|(\s*)([\w.]+)\s*$")


def base_distributions() -> set[str]:
    """Normalized names of the base dependencies and everything they require (no extras)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        name = canonical(req.name)
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(r) for r in importlib.metadata.requires(req.name) or []]
    return seen


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_top_level(log: str) -> set[str]:
    return {m.group(2).split(".")[0] for m in map(IMPORT_LINE.match, log.splitlines()) if m}


def test_serving_onnx_imports_only_the_base_dependencies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    digits = REPO_ROOT / "models" / "digits"
    args = [
        "--model_name=digits",
        f"--model_base_path={digits}",
        "--workers=1",
        "--rest_api_port=0",
    ]
    gateway = start_gateway(args, tmp_path)
    try:
        with Client(gateway.target, timeout=30) as client:
            client.predict("digits", {"images": np.zeros((1, 64), np.float32)})
    finally:
        assert gateway.stop(signal.SIGTERM) == 0, gateway.log()
    log = gateway.log()
    assert "workers.worker" in log and "onnxruntime" in log, "both processes' imports are seen"
    modules = imported_top_level(log)
    assert not modules & NEVER, sorted(modules & NEVER)
    owners = importlib.metadata.packages_distributions()
    allowed = base_distributions()
    outside = {
        module: owners[module]
        for module in modules
        - set(sys.stdlib_module_names)
        - {"gateway", "workers", "channel"}
        - set(OPTIONAL)
        if module in owners and not {canonical(d) for d in owners[module]} & allowed
    }
    assert not outside, f"imported from distributions outside the base install: {outside}"
