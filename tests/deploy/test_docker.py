"""deploy/Dockerfile and its entry point, without building the image (test_image.py builds and
runs it, in ``make test-image``): the Dockerfile is linted with hadolint (pinned in the dev extra)
and checked for the conventions the issue names (its base a build argument, targets, ports,
non-root, every package pyproject.toml lists copied, what it copies sent by .dockerignore), and the
entry point script runs for real, outside a container, in front of a real gateway."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from gateway.client import Client
from tests.support.gateway_proc import start_gateway
from tests.support.paths import REPO_ROOT

DOCKERFILE = REPO_ROOT / "deploy" / "Dockerfile"
ENTRYPOINT = REPO_ROOT / "deploy" / "docker" / "entrypoint.sh"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    parsed = []
    for line in lines:
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            parsed.append((keyword.upper(), rest.strip()))
    return parsed


def stages() -> list[tuple[str, list[tuple[str, str]]]]:
    """(stage name, its instructions) in order; the first, named "", holds what comes before the
    first FROM (the global ARGs)."""
    out: list[tuple[str, list[tuple[str, str]]]] = [("", [])]
    for keyword, rest in instructions():
        if keyword == "FROM":
            out.append((rest.split(" AS ")[-1].strip() if " AS " in rest else rest, []))
        else:
            out[-1][1].append((keyword, rest))
    return out


def bases() -> dict[str, str]:
    """Each stage's name: the image or stage it starts from."""
    return {
        rest.split(" AS ")[1].strip(): rest.split(" AS ")[0].strip()
        for keyword, rest in instructions()
        if keyword == "FROM"
    }


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    done = subprocess.run(
        [hadolint, "--failure-threshold", "style", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_base_is_a_build_argument() -> None:
    """One Dockerfile for python:3.11-slim from a registry and for the base scripts/image.py
    bootstraps where none can be reached: every stage starts from ${BASE_IMAGE} or another stage."""
    (global_args, _), *_ = stages()
    assert global_args == ""
    assert ("ARG", "BASE_IMAGE=python:3.11-slim") in dict(stages())[""]
    named = bases()
    for stage, base in named.items():
        assert base == "${BASE_IMAGE}" or base in named, (stage, base)
    assert named["runtime"] == "${BASE_IMAGE}"


def test_targets_ports_user_and_entry_point() -> None:
    named = dict(stages())
    assert list(named)[-1] == "onnx", "the ONNX-only image must be the default (last) target"
    assert "tensorflow" in named
    runtime = named["runtime"]
    assert ("EXPOSE", "8500") in runtime and ("EXPOSE", "8501") in runtime
    (user,) = [rest for keyword, rest in runtime if keyword == "USER"]
    assert user.isdigit() and int(user) != 0
    env = " ".join(rest for keyword, rest in runtime if keyword == "ENV")
    assert "MODEL_BASE_PATH=/models" in env and "MODEL_NAME=model" in env
    (entry,) = [rest for keyword, rest in runtime if keyword == "ENTRYPOINT"]
    assert entry == '["/usr/bin/tensorgate_entrypoint.sh"]'
    assert any(
        k == "COPY" and r.endswith("deploy/docker/entrypoint.sh /usr/bin/tensorgate_entrypoint.sh")
        for k, r in runtime
    )
    # The TensorFlow target installs the extra; the default one does not. Both copy a virtualenv
    # of dependencies, then tensorgate's own files as a layer of their own.
    chain = bases()
    assert chain["tensorflow"] == chain["onnx"] == "runtime"
    copied = {
        target: [r for k, r in named[target] if k == "COPY" and "--from=" in r]
        for target in ("tensorflow", "onnx")
    }
    assert copied == {
        "tensorflow": [
            "--from=deps-tensorflow /opt/tensorgate /opt/tensorgate",
            "--from=build /stage/ /",
        ],
        "onnx": ["--from=deps /opt/tensorgate /opt/tensorgate", "--from=build /stage/ /"],
    }
    assert chain["deps-tensorflow"] == chain["build"] == "deps"
    deps_tf = " ".join(rest for _, rest in named["deps-tensorflow"])
    assert "buildtool.py requirements tensorflow" in deps_tf
    for stage in ("deps", "build"):
        assert "tensorflow" not in " ".join(rest for _, rest in named[stage])
    # No RUN step in what the images are made of past their base: nothing a build mounts for RUN
    # steps (scripts/image.py mounts pip's configuration) can leave a trace in them.
    for stage in ("runtime", "tensorflow", "onnx"):
        assert not [rest for keyword, rest in named[stage] if keyword == "RUN"], stage


def test_every_package_pyproject_lists_is_copied() -> None:
    """pyproject.toml's package list (gateway*, workers*, channel*, ...) and the sources the image
    installs agree."""
    with open(REPO_ROOT / "pyproject.toml", "rb") as file:
        include = tomllib.load(file)["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.name for p in REPO_ROOT.iterdir() if (p / "__init__.py").exists()}
    listed = {p for p in packages if any(fnmatch.fnmatch(p, pattern) for pattern in include)}
    assert listed
    build = dict(stages())["build"]
    copied = {rest.split()[0] for keyword, rest in build if keyword == "COPY"}
    assert listed <= copied, listed - copied


def test_every_copied_path_exists_and_is_sent_to_the_builder() -> None:
    allowed = [
        line[1:].rstrip("/")
        for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    ]
    sources = []
    for keyword, rest in instructions():
        if keyword == "COPY" and "--from=" not in rest:
            words = [w for w in rest.split() if not w.startswith("--")]
            sources += words[:-1]
    assert sources
    for source in sources:
        assert (REPO_ROOT / source).exists(), source
        assert any(
            source.rstrip("/") == a or source.startswith(a + "/") or fnmatch.fnmatch(source, a)
            for a in allowed
        ), f"{source} is excluded by .dockerignore"


@pytest.fixture
def image_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a ``tensorgate`` command running this checkout (the image's venv has one)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "tensorgate"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gateway "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def predict_digit(target: str, model: str) -> int:
    with Client(target, timeout=30) as client:
        outputs = client.predict(model, {"images": np.zeros((1, 64), np.float32)})
    return int(outputs["label"][0])


# Appended to the entry point's command line, as `docker run IMAGE <flags>` would: an OS-chosen
# gRPC port instead of 8500, no REST (8501 may be taken here), one worker.
TEST_FLAGS = ["--port=0", "--rest_api_port=0", "--workers=1", "--file_system_poll_wait_seconds=0"]


def test_entry_point_serves_model_name_from_model_base_path(
    image_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**image_env, "MODEL_NAME": "digits", "MODEL_BASE_PATH": str(REPO_ROOT / "models")}
    gateway = start_gateway(TEST_FLAGS, tmp_path, command=[str(ENTRYPOINT)], env=env)
    try:
        # exec: the script's process is the gateway, so the container's SIGTERM reaches it.
        assert gateway.ready_info["pid"] == gateway.pid
        assert predict_digit(gateway.target, "digits") in range(10)
    finally:
        code = gateway.stop(signal.SIGTERM)
    assert code == 0, gateway.log()


def test_appended_flags_win_over_the_image_defaults(
    image_env: dict[str, str], tmp_path: Path
) -> None:
    """TF Serving's documented `docker run ... --model_config_file=...`: MODEL_NAME is unset (the
    image default "model", absent here) and the config file names the model instead."""
    config = tmp_path / "models.config"
    digits = REPO_ROOT / "models" / "digits"
    config.write_text(
        f'model_config_list {{ config {{ name: "renamed" base_path: "{digits}" }} }}\n'
    )
    env = {k: v for k, v in image_env.items() if k not in ("MODEL_NAME", "MODEL_BASE_PATH")}
    env["MODEL_BASE_PATH"] = str(tmp_path / "nothing-here")
    gateway = start_gateway(
        [*TEST_FLAGS, f"--model_config_file={config}"], tmp_path, command=[str(ENTRYPOINT)], env=env
    )
    try:
        assert predict_digit(gateway.target, "renamed") in range(10)
    finally:
        code = gateway.stop(signal.SIGTERM)
    assert code == 0, gateway.log()
