"""The container images, built and run for real with podman (tests/deploy/test_image.py).

Images are built by scripts/image.py, exactly as ``make image`` / ``make image-tensorflow`` build
them; containers are started with ``podman run`` as deploy/README.md shows, their ports published
on OS-chosen host ports of 127.0.0.1, and removed (``podman rm --force``) when a test is done.
podman reads deploy/podman/containers.conf, as scripts/image.py makes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.paths import REPO_ROOT
from tests.support.rest import urlopen_answer

SCRIPT = REPO_ROOT / "scripts" / "image.py"
CONTAINERS_CONF = REPO_ROOT / "deploy" / "podman" / "containers.conf"
TAGS = {"onnx": "tensorgate:0.1.0", "tensorflow": "tensorgate:0.1.0-tf"}
ENABLE_VARIABLE = "TENSORGATE_IMAGE_TESTS"

BUILD_TIMEOUT_S = 1800.0
READY_TIMEOUT_S = 240.0
PODMAN_TIMEOUT_S = 120.0


def podman_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(CONTAINERS_CONF))
    return env


def podman(*args: str, timeout: float = PODMAN_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """``podman ARGS``, output captured, not checked."""
    return subprocess.run(
        ["podman", *args],
        env=podman_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def checked(*args: str, timeout: float = PODMAN_TIMEOUT_S) -> str:
    """``podman ARGS``' stdout; AssertionError with its stderr when it fails."""
    done = podman(*args, timeout=timeout)
    assert done.returncode == 0, f"podman {' '.join(args)}: {done.returncode}\n{done.stderr}"
    return done.stdout


NOT_ENABLED = (
    f"builds and runs the container images (minutes): `make test-image` sets {ENABLE_VARIABLE}=1 "
    "(.ci/run runs it after `make test`)"
)


def enabled() -> bool:
    """Whether this run builds and runs images (``make test-image``)."""
    return os.environ.get(ENABLE_VARIABLE) == "1"


def unavailable() -> tuple[str, bool] | None:
    """``(why, must_fail)`` when images cannot be built and run here, else None.

    ``must_fail``: podman should work here (root, apt-get: ``make test-image`` installs it) but
    does not, which is a failure rather than a reason to skip.
    """
    installable = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if shutil.which("podman") is None:
        if installable:
            return "podman is missing although scripts/image_deps.sh could install it", True
        return "podman is not installed and cannot be here (needs root and apt-get)", False
    done = podman("info", "--format", "{{.Host.OCIRuntime.Name}}")
    if done.returncode != 0:
        why = f"podman cannot run here: {done.stderr.strip()[-2000:]}"
        return why, os.geteuid() == 0
    return None


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    target: str
    seconds: float
    size_mb: float
    log: str


BUILT: list[BuiltImage] = []
"""The images built in this session, for the terminal summary (tests/deploy/conftest.py)."""


def build(target: str, log_dir: Path) -> BuiltImage:
    """``scripts/image.py build --target TARGET`` (what ``make image`` runs), its log kept."""
    log = log_dir / f"build-{target}.log"
    started = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "build", "--target", target],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    seconds = time.monotonic() - started
    text = log.read_text(errors="replace")
    assert done.returncode == 0, f"building the {target} image failed:\n{text[-8000:]}"
    tag = TAGS[target]
    size = int(checked("image", "inspect", "--format", "{{.Size}}", tag)) / 1e6
    image = BuiltImage(tag, target, seconds, size, text)
    BUILT.append(image)
    return image


def run_in_image(
    image: str, script: str, *, user: str = "", timeout: float = PODMAN_TIMEOUT_S
) -> str:
    """``script`` run by /bin/sh in a throw-away container of ``image`` (its entry point replaced,
    as ``podman run --entrypoint``), as ``user`` if given."""
    options = ["--rm", "--network=none", "--entrypoint=/bin/sh"]
    options += [f"--user={user}"] if user else []
    return checked("run", *options, image, "-c", script, timeout=timeout)


@dataclass
class Container:
    name: str
    image: str

    def host_port(self, container_port: int) -> int:
        """The 127.0.0.1 port ``container_port`` is published on."""
        mapping = checked("port", self.name, f"{container_port}/tcp").split()[0]
        return int(mapping.rpartition(":")[2])

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.host_port(8500)}"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.host_port(8501)}"

    def inspect(self, template: str) -> str:
        return checked("inspect", "--format", template, self.name).strip()

    def running(self) -> bool:
        return self.inspect("{{.State.Running}}") == "true"

    def logs(self) -> str:
        done = podman("logs", self.name)
        return done.stdout + done.stderr

    def exec(self, *command: str) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.name, *command)

    def stop(self, grace_s: int) -> tuple[int, float]:
        """``podman stop --time GRACE``: (exit code, seconds it took)."""
        started = time.monotonic()
        checked("stop", f"--time={grace_s}", self.name, timeout=grace_s + PODMAN_TIMEOUT_S)
        seconds = time.monotonic() - started
        return int(self.inspect("{{.State.ExitCode}}")), seconds

    def remove(self) -> None:
        podman("rm", "--force", "--time=0", self.name)


def http(
    url: str, body: Any = None, *, timeout: float = 30.0
) -> tuple[int, bytes, Mapping[str, str]]:
    """(status, body, headers) of a GET (or a POST of ``body`` as JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    return urlopen_answer(request, timeout)


def wait_ready(container: Container, timeout: float = READY_TIMEOUT_S) -> None:
    """Until REST ``/readyz`` answers 200 (every configured model available); AssertionError with
    the container's log if it exits or takes longer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not container.running():
            raise AssertionError(f"{container.name} exited:\n{container.logs()}")
        with contextlib.suppress(OSError):
            if http(container.rest_url + "/readyz", timeout=5)[0] == 200:
                return
        time.sleep(0.5)
    raise AssertionError(f"{container.name} not ready in {timeout:.0f} s:\n{container.logs()}")


@contextlib.contextmanager
def running(
    image: str,
    name: str,
    *,
    env: Mapping[str, str] | None = None,
    volumes: Sequence[tuple[Path, str]] = (),
    flags: Sequence[str] = (),
    writable_tmp: bool = True,
) -> Iterator[Container]:
    """``podman run -d`` of ``image`` with gRPC and REST published on 127.0.0.1, a read-only root
    file system (with a tmpfs at /tmp, /var/tmp and /run, podman's default, unless not
    ``writable_tmp``), ``volumes`` mounted read-only and ``flags`` appended to the entry point's;
    ready when entered; removed when left."""
    name = f"tensorgate-test-{os.getpid()}-{name}"
    command = ["run", "--detach", f"--name={name}", "--publish=127.0.0.1::8500"]
    command += ["--publish=127.0.0.1::8501"]
    command += ["--read-only"] + ([] if writable_tmp else ["--read-only-tmpfs=false"])
    command += [f"--env={key}={value}" for key, value in (env or {}).items()]
    command += [f"--volume={source}:{target}:ro" for source, target in volumes]
    container = Container(name, image)
    try:
        checked(*command, image, *flags)
        wait_ready(container)
        yield container
    finally:
        container.remove()
