"""The peers' own virtualenvs under ``bench/.venvs/`` (created on first use, then reused).

- ``mlserver``: Seldon MLServer 1.7.1 with ``uvloop<0.22`` (1.7.1 crashes at start with uvloop
  ≥ 0.22), ONNX Runtime and httptools (uvicorn's fast HTTP parser, as MLServer's image has).
- ``tools``: py-spy (the sampling profiler of ``python -m bench profile``).
- ``fastapi``: FastAPI + ``uvicorn[standard]`` (uvloop and httptools: the seeds' advice) + ONNX
  Runtime, the versions of the main environment, and what the seeds' image endpoint needs:
  ``python-multipart`` (``UploadFile``) and Pillow.
- ``triton``: PyTriton 0.7.0 (it bundles ``tritonserver`` 2.51) + ``tritonclient`` + ONNX Runtime.
  Made with Debian's ``/usr/bin/python3.11``: Triton's Python-backend stub links Debian's
  ``libpython3.11``, and a venv of another 3.11 build fails at model load (``'_thread.RLock'
  object has no attribute '_recursion_count'``). When that interpreter (or its ``venv`` module)
  is missing, ``apt-get install python3.11 python3.11-venv libpython3.11`` runs first (as root).
- ``kserve``: KServe 0.21 (its Python ``ModelServer``) + ONNX Runtime.

A venv counts as ready when its marker file holds its recipe; a failed install leaves no marker
and the reason in ``bench/.venvs/<name>.log``. Creation is bounded in time and serialized per
venv (a file lock), so systems started side by side share one install.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

VENV_ROOT = Path(__file__).resolve().parents[1] / ".venvs"
INSTALL_TIMEOUT_S = 900.0
DEBIAN_PYTHON = "/usr/bin/python3.11"


@dataclass(frozen=True)
class Recipe:
    requirements: tuple[str, ...]
    base_python: str = ""
    """The interpreter that makes the venv (default: the one running the bench)."""
    apt_packages: tuple[str, ...] = ()
    """Debian packages that provide ``base_python`` and its venv module."""


RECIPES: dict[str, Recipe] = {
    "mlserver": Recipe(
        ("mlserver==1.7.1", "uvloop<0.22", "onnxruntime==1.31.1", "numpy==2.4.6", "httptools")
    ),
    "tools": Recipe(("py-spy==0.4.3",)),
    "fastapi": Recipe(
        (
            "fastapi==0.163.2",
            "uvicorn[standard]==0.54.0",
            "onnxruntime==1.31.1",
            "numpy==2.4.6",
            "python-multipart==0.0.34",
            "pillow==13.0.0",
        )
    ),
    "triton": Recipe(
        (
            "nvidia-pytriton==0.7.0",
            "tritonclient[grpc,http]==2.73.0",
            "onnxruntime==1.31.1",
            "numpy==1.26.4",  # pytriton 0.7.0 requires numpy < 2
        ),
        base_python=DEBIAN_PYTHON,
        apt_packages=("python3.11", "python3.11-venv", "libpython3.11"),
    ),
    "kserve": Recipe(("kserve==0.21.0", "onnxruntime==1.31.1", "numpy==2.4.6")),
}


def python_of(name: str) -> Path:
    return VENV_ROOT / name / "bin" / "python"


def ensure(name: str) -> tuple[Path | None, str]:
    """The venv's python, creating the venv if needed; ``(None, reason)`` if that fails."""
    recipe = RECIPES[name]
    venv = VENV_ROOT / name
    marker = venv / ".bench-installed"
    wanted = "\n".join((recipe.base_python or "this interpreter", *recipe.requirements))
    if marker.exists() and marker.read_text() == wanted:
        return python_of(name), ""
    VENV_ROOT.mkdir(parents=True, exist_ok=True)
    with open(VENV_ROOT / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another thread or run may be installing it
        if marker.exists() and marker.read_text() == wanted:
            return python_of(name), ""
        log_path = VENV_ROOT / f"{name}.log"
        log.info("creating %s (%s); log: %s", venv, " ".join(recipe.requirements), log_path)
        with open(log_path, "wb") as out:
            reason = _create(name, recipe, venv, out)
        if reason:
            return None, f"{reason}; see {log_path}"
        marker.write_text(wanted)
    return python_of(name), ""


def _create(name: str, recipe: Recipe, venv: Path, out: IO[bytes]) -> str:
    base = recipe.base_python or sys.executable
    if recipe.apt_packages and not _can_make_venvs(base):
        reason = _apt_install(recipe.apt_packages, out)
        if reason:
            return f"{name} venv: {base} cannot make venvs and {reason}"
    shutil.rmtree(venv, ignore_errors=True)
    steps = [
        [base, "-m", "venv", str(venv)],
        [
            str(python_of(name)),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *recipe.requirements,
        ],
    ]
    for step in steps:
        if not _run(step, out):
            return f"{name} venv: '{' '.join(step[:4])} ...' failed or ran past the time limit"
    return ""


def _can_make_venvs(python: str) -> bool:
    if not Path(python).exists():
        return False
    probe = subprocess.run(
        [python, "-c", "import ensurepip, venv"], capture_output=True, timeout=60, check=False
    )
    return probe.returncode == 0


def _apt_install(packages: tuple[str, ...], out: IO[bytes]) -> str:
    """``apt-get install`` ``packages`` (after ``apt-get update``); "" or why it could not."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"installing {' '.join(packages)} needs root and apt-get"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        if not _run(step, out, env):
            return f"'{' '.join(step[:3])} ...' failed"
    return ""


def _run(argv: list[str], out: IO[bytes], env: dict[str, str] | None = None) -> bool:
    out.write(f"$ {' '.join(argv)}\n".encode())
    out.flush()
    try:
        code = subprocess.run(
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=INSTALL_TIMEOUT_S
        ).returncode
    except subprocess.TimeoutExpired:
        out.write(b"(ran past the time limit)\n")
        return False
    return code == 0
