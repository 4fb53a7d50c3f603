"""tensorgate and the echo server on other grpcio releases: a virtualenv and a scratch copy each.

``python -m bench grpcio`` (:mod:`bench.scenarios.grpcio`) measures the same code on several
grpcio releases. For each version this module builds, once, ``bench/.venvs/grpcio-<version>/``:

- grpcio, grpcio-tools, grpcio-health-checking and grpcio-reflection of that version;
- the protobuf its grpcio-tools accepts (:func:`protobuf_for`: before 1.82 grpcio-tools requires
  ``protobuf<7``, so the newest 6.33.x; from 1.82 on, the main pin from constraints.txt);
- tensorgate's other base dependencies (pyproject.toml's ``[project] dependencies``) and
  mypy-protobuf (``scripts/gen_protos.py`` writes stubs too), all under constraints.txt less its
  grpc and protobuf lines.

A venv counts as ready when its marker file holds its recipe (:func:`recipe_text`: requirements
and constraints), so a changed constraints.txt rebuilds it; a failed install leaves no marker
and the reason in ``bench/.venvs/grpcio-<version>.log``.

Every run then copies the product's packages (``gateway``, ``workers``, ``channel``) into
``bench/.venvs/grpcio-<version>/src/`` and regenerates ``gateway/_pb`` there with that venv's
grpcio-tools (:func:`scratch_tree`), since generated ``*_pb2_grpc`` modules refuse an older grpcio
than the one that generated them, and protobuf gencode of one major version warns on the next.
Servers run with ``PYTHONPATH`` naming the scratch copy first and ``PYTHONSAFEPATH=1`` (the
working directory, the repository, never shadows it): :func:`server_env`.
"""

from __future__ import annotations

import fcntl
import json
import logging
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
VENV_ROOT = REPO / "bench" / ".venvs"
GEN_PROTOS = REPO / "scripts" / "gen_protos.py"
PACKAGES = ("gateway", "workers", "channel")
"""The product's packages copied into each scratch tree."""
GRPC_DISTRIBUTIONS = ("grpcio", "grpcio-tools", "grpcio-health-checking", "grpcio-reflection")
"""Installed at the version under test (grpcio-tools too: it generates the scratch protos)."""
PROTOBUF_6 = "6.33.6"
"""The newest protobuf 6.x: what grpcio-tools before :data:`FIRST_PROTOBUF_7` get."""
FIRST_PROTOBUF_7 = (1, 82)
"""The first grpcio-tools minor that requires protobuf 7 (1.75–1.81: ``protobuf<7``)."""
INSTALL_TIMEOUT_S = 900.0
GEN_TIMEOUT_S = 300.0
VERSIONS_SCRIPT = (
    "import json, importlib.metadata as m; print(json.dumps({d: m.version(d) for d in "
    "('grpcio', 'grpcio-tools', 'grpcio-health-checking', 'grpcio-reflection', 'protobuf', "
    "'uvloop')}))"
)
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def parse_version(text: str) -> tuple[int, int, int]:
    """``"1.78.2"`` → ``(1, 78, 2)``; ValueError for anything but three dotted numbers."""
    if not _VERSION.match(text.strip()):
        raise ValueError(f"not a grpcio release number (like 1.78.2): {text!r}")
    major, minor, patch = (int(p) for p in text.strip().split("."))
    return major, minor, patch


def parse_versions(text: str) -> list[str]:
    """A comma-separated list of release numbers, each once, in the order given."""
    out: list[str] = []
    for item in text.split(","):
        if not item.strip():
            continue
        parse_version(item)
        if item.strip() not in out:
            out.append(item.strip())
    if not out:
        raise ValueError("name at least one grpcio version")
    return out


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them (``ml_dtypes`` == ``ml-dtypes``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(line: str) -> str:
    """The distribution a requirement or constraint line names (normalized); "" for none."""
    stripped = line.split("#", 1)[0].strip()
    match = _NAME.match(stripped)
    return normalized(match.group(1)) if match else ""


def is_grpc_or_protobuf(name: str) -> bool:
    """The distributions whose version the grpcio venvs choose themselves."""
    n = normalized(name)
    return n == "protobuf" or n.startswith("grpcio")


def pinned_version(constraints: str, name: str) -> str:
    """The ``==`` version ``constraints`` gives ``name``; ValueError when it pins none."""
    for line in constraints.splitlines():
        if requirement_name(line) == normalized(name) and "==" in line:
            return line.split("==", 1)[1].split(";", 1)[0].split("#", 1)[0].strip()
    raise ValueError(f"constraints.txt pins no {name}")


def filtered_constraints(constraints: str) -> str:
    """constraints.txt without its grpc and protobuf lines (the venv's own choice)."""
    kept = [
        line
        for line in constraints.splitlines()
        if not is_grpc_or_protobuf(requirement_name(line) or "-")
    ]
    return "\n".join(kept) + "\n"


def protobuf_for(version: str, constraints: str) -> str:
    """The protobuf that grpcio-tools ``version`` accepts: the newest 6.33.x before 1.82, else
    constraints.txt's pin (7.x)."""
    if parse_version(version)[:2] < FIRST_PROTOBUF_7:
        return PROTOBUF_6
    return pinned_version(constraints, "protobuf")


def base_requirements(pyproject: str) -> list[str]:
    """tensorgate's base dependencies (pyproject's ``[project] dependencies``) without grpc and
    protobuf, as written there."""
    deps: list[str] = tomllib.loads(pyproject)["project"]["dependencies"]
    return [d for d in deps if not is_grpc_or_protobuf(requirement_name(d))]


@dataclass(frozen=True)
class GrpcRecipe:
    """What one grpcio version's venv holds."""

    version: str
    requirements: tuple[str, ...]
    constraints: str
    """The constraints file the install runs under (constraints.txt less grpc and protobuf)."""

    @property
    def name(self) -> str:
        return f"grpcio-{self.version}"


def recipe(version: str, pyproject: str, constraints: str) -> GrpcRecipe:
    """The venv recipe of grpcio ``version`` from the repository's pyproject and constraints."""
    parse_version(version)
    grpc = tuple(f"{d}=={version}" for d in GRPC_DISTRIBUTIONS)
    protobuf = f"protobuf=={protobuf_for(version, constraints)}"
    tools = (f"mypy-protobuf=={pinned_version(constraints, 'mypy-protobuf')}",)
    requirements = (*grpc, protobuf, *tools, *base_requirements(pyproject))
    return GrpcRecipe(version, requirements, filtered_constraints(constraints))


def recipe_text(r: GrpcRecipe) -> str:
    """The marker's content: a venv is reused only while this is unchanged."""
    return "\n".join((sys.executable, *r.requirements, "-- constraints --", r.constraints))


def repo_recipe(version: str) -> GrpcRecipe:
    return recipe(
        version, (REPO / "pyproject.toml").read_text(), (REPO / "constraints.txt").read_text()
    )


def venv_dir(version: str) -> Path:
    return VENV_ROOT / f"grpcio-{version}"


def python_of(version: str) -> Path:
    return venv_dir(version) / "bin" / "python"


def install_argv(python: Path, constraints_file: Path, r: GrpcRecipe) -> list[str]:
    """The pip command that fills the venv."""
    return [
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--constraint",
        str(constraints_file),
        *r.requirements,
    ]


def ensure(version: str) -> Path:
    """The venv's python, building the venv if needed; RuntimeError (with the log) if that fails.

    Serialized per version with a file lock, so concurrent runs share one install.
    """
    r = repo_recipe(version)
    venv, wanted = venv_dir(version), recipe_text(r)
    marker = venv / ".bench-installed"
    if marker.exists() and marker.read_text() == wanted:
        return python_of(version)
    VENV_ROOT.mkdir(parents=True, exist_ok=True)
    with open(VENV_ROOT / f"{r.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and marker.read_text() == wanted:
            return python_of(version)
        log_path = VENV_ROOT / f"{r.name}.log"
        log.info("creating %s (%s); log: %s", venv, " ".join(r.requirements[:5]), log_path)
        shutil.rmtree(venv, ignore_errors=True)
        constraints_file = VENV_ROOT / f"{r.name}.constraints.txt"
        constraints_file.write_text(r.constraints)
        with open(log_path, "wb") as out:
            steps = [
                [sys.executable, "-m", "venv", str(venv)],
                install_argv(python_of(version), constraints_file, r),
            ]
            for step in steps:
                if not _run(step, out, INSTALL_TIMEOUT_S):
                    raise RuntimeError(
                        f"{r.name} venv: '{' '.join(step[:4])} ...' failed; see {log_path}"
                    )
        marker.write_text(wanted)
    return python_of(version)


def installed_versions(python: Path) -> dict[str, str]:
    """The grpc and protobuf distributions (and uvloop) installed in ``python``'s venv."""
    out = subprocess.run(
        [str(python), "-c", VERSIONS_SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    versions: dict[str, str] = json.loads(out.stdout)
    return versions


def scratch_tree(version: str, python: Path) -> Path:
    """A fresh copy of the product's packages for ``version``, its protos regenerated by that
    venv's grpcio-tools; returns the directory to put first on ``PYTHONPATH``."""
    src = venv_dir(version) / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PACKAGES:
        shutil.copytree(REPO / package, src / package, ignore=ignore)
    log_path = VENV_ROOT / f"grpcio-{version}.gen.log"
    with open(log_path, "wb") as out:
        argv = [str(python), str(GEN_PROTOS), "--out", str(src / "gateway" / "_pb")]
        if not _run(argv, out, GEN_TIMEOUT_S):
            raise RuntimeError(
                f"generating the protos with grpcio-tools {version} failed; see {log_path}"
            )
    return src


GENERATED_MARKS = {
    "grpc_generated": re.compile(r"^GRPC_GENERATED_VERSION = '([^']+)'", re.MULTILINE),
    "protobuf_gencode": re.compile(r"^# Protobuf Python Version: (\S+)", re.MULTILINE),
}


def generated_versions(pb_dir: Path) -> dict[str, str]:
    """The grpcio-tools and protobuf gencode versions stamped in a generated ``_pb`` tree."""
    service = pb_dir / "tensorflow_serving" / "apis" / "prediction_service_pb2_grpc.py"
    message = pb_dir / "tensorflow_serving" / "apis" / "predict_pb2.py"
    out: dict[str, str] = {}
    for key, path in (("grpc_generated", service), ("protobuf_gencode", message)):
        match = GENERATED_MARKS[key].search(path.read_text()) if path.exists() else None
        if match:
            out[key] = match.group(1)
    return out


def server_env(src: Path, base: dict[str, str]) -> dict[str, str]:
    """The environment of a server run from scratch tree ``src``: its packages first on the path,
    then the repository (for ``bench.systems.peers``); the working directory never added."""
    return {**base, "PYTHONPATH": f"{src}:{REPO}", "PYTHONSAFEPATH": "1"}


def _run(argv: Iterable[str], out: IO[bytes], timeout_s: float) -> bool:
    argv = list(argv)
    out.write(f"$ {' '.join(argv)}\n".encode())
    out.flush()
    try:
        code = subprocess.run(
            argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s
        ).returncode
    except subprocess.TimeoutExpired:
        out.write(b"(ran past the time limit)\n")
        return False
    return code == 0
