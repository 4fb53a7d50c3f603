"""The container images, built and run for real with podman (tests/deploy/test_image.py).

Images are built by scripts/image.py, exactly as ``make image`` / ``make image-tensorflow`` build
them (one tag, a manifest list of each architecture's image); containers are started with
``podman run`` as deploy/README.md shows, their ports published on OS-chosen host ports of
127.0.0.1, and removed (``podman rm --force``) when a test is done. An image of another
architecture than this machine's runs under emulation (qemu-user through binfmt_misc, which
scripts/image.py checks for and scripts/image_deps.sh sets up). podman reads
deploy/podman/containers.conf, as scripts/image.py makes it.
"""

from __future__ import annotations

import contextlib
import importlib.util
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
from types import ModuleType
from typing import Any

from tests.support.paths import REPO_ROOT
from tests.support.rest import urlopen_answer
from tests.support.waits import until

SCRIPT = REPO_ROOT / "scripts" / "image.py"
CONTAINERS_CONF = REPO_ROOT / "deploy" / "podman" / "containers.conf"
TAGS = {"onnx": "tensorgate:0.1.0", "tensorflow": "tensorgate:0.1.0-tf"}
ENABLE_VARIABLE = "TENSORGATE_IMAGE_TESTS"

BUILD_TIMEOUT_S = 3600.0
READY_TIMEOUT_S = 240.0
EMULATED_READY_TIMEOUT_S = 600.0
PODMAN_TIMEOUT_S = 120.0


def image_script() -> ModuleType:
    """scripts/image.py as a module: its rules of architectures and emulation."""
    spec = importlib.util.spec_from_file_location("image_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IMAGE_SCRIPT = image_script()
NATIVE_ARCH: str = IMAGE_SCRIPT.native_arch()


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


def emulation_unavailable(arch: str) -> tuple[str, bool] | None:
    """``(why, must_fail)`` when containers of ``arch`` cannot run here, else None. ``must_fail``:
    as root with apt-get, where ``make test-image`` (image-deps) sets emulation up."""
    why: str | None = IMAGE_SCRIPT.emulation_missing(arch)
    if why is None:
        return None
    installable = os.geteuid() == 0 and shutil.which("apt-get") is not None
    return f"{arch} containers cannot run on this {NATIVE_ARCH} machine: {why}", installable


ARM64_CPU = """processor\t: {index}
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc \
dcpop asimddp ssbs
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1

"""


def write_arm64_cpuinfo(path: Path) -> Path:
    """``path``, written as the ``/proc/cpuinfo`` of as many Neoverse-N1 cores as this machine
    has CPUs, to mount over it in emulated arm64 containers. qemu-user shows arm64 programs the
    host's own file unless it emulates it (Debian 12's qemu 7.2 does not; later QEMU versions
    do): onnxruntime's CPU detection (the cpuinfo library) then finds no ARM core and crashes at
    import (SIGSEGV). runc allows a mount over that file (as lxcfs does); on arm64 hardware
    nothing of this is needed."""
    path.write_text("".join(ARM64_CPU.format(index=i) for i in range(os.cpu_count() or 1)))
    path.chmod(0o644)
    return path


@dataclass(frozen=True)
class BuiltImage:
    """One architecture's image of a target: ``tag`` (the manifest list) run with
    ``--platform=platform`` is it; ``seconds``: the build of every architecture of the tag."""

    tag: str
    target: str
    arch: str
    seconds: float
    size_mb: float
    log: str

    @property
    def platform(self) -> str:
        return f"linux/{self.arch}"


BUILT: list[BuiltImage] = []
"""The images built in this session, for the terminal summary (tests/deploy/conftest.py)."""


def build(target: str, log_dir: Path, arches: Sequence[str]) -> dict[str, BuiltImage]:
    """``scripts/image.py build --target TARGET --arch ...`` (what ``make image`` runs, for every
    architecture), its log kept: each architecture's image."""
    log = log_dir / f"build-{target}.log"
    started = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "build", "--target", target]
            + [f"--arch={arch}" for arch in arches],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    seconds = time.monotonic() - started
    text = log.read_text(errors="replace")
    assert done.returncode == 0, f"building the {target} image failed:\n{text[-8000:]}"
    tag = TAGS[target]
    images = {}
    for arch in arches:
        size = int(checked("image", "inspect", "--format", "{{.Size}}", f"{tag}-{arch}")) / 1e6
        images[arch] = BuiltImage(tag, target, arch, seconds, size, text)
        BUILT.append(images[arch])
    return images


def manifest_platforms(tag: str) -> list[str]:
    """The platforms (``os/architecture``) the manifest list ``tag`` holds an image for."""
    listed = json.loads(checked("manifest", "inspect", tag))
    return [f"{m['platform']['os']}/{m['platform']['architecture']}" for m in listed["manifests"]]


def run_in_image(
    image: str,
    script: str,
    *,
    user: str = "",
    platform: str = "",
    volumes: Sequence[tuple[Path, str]] = (),
    timeout: float = PODMAN_TIMEOUT_S,
) -> str:
    """``script`` run by /bin/sh in a throw-away container of ``image`` (its entry point replaced,
    as ``podman run --entrypoint``), as ``user`` if given, of ``platform``'s image if given, with
    ``volumes`` mounted read-only."""
    options = ["--rm", "--network=none", "--entrypoint=/bin/sh"]
    options += [f"--user={user}"] if user else []
    options += [f"--platform={platform}"] if platform else []
    options += [f"--volume={source}:{target}:ro" for source, target in volumes]
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

    def ready() -> bool:
        if not container.running():
            raise AssertionError(f"{container.name} exited:\n{container.logs()}")
        with contextlib.suppress(OSError):
            return http(container.rest_url + "/readyz", timeout=5)[0] == 200
        return False

    until(ready, lambda: f"{container.name} ready:\n{container.logs()}", timeout, poll_s=0.5)


@contextlib.contextmanager
def running(
    image: str,
    name: str,
    *,
    env: Mapping[str, str] | None = None,
    volumes: Sequence[tuple[Path, str]] = (),
    flags: Sequence[str] = (),
    writable_tmp: bool = True,
    platform: str = "",
    ready_timeout: float = READY_TIMEOUT_S,
) -> Iterator[Container]:
    """``podman run -d`` of ``image`` with gRPC and REST published on 127.0.0.1, a read-only root
    file system (with a tmpfs at /tmp, /var/tmp and /run, podman's default, unless not
    ``writable_tmp``), ``volumes`` mounted read-only and ``flags`` appended to the entry point's;
    ``platform``'s image of a manifest list if given (this machine's otherwise); ready when
    entered (within ``ready_timeout`` seconds); removed when left."""
    name = f"tensorgate-test-{os.getpid()}-{name}"
    command = ["run", "--detach", f"--name={name}", "--publish=127.0.0.1::8500"]
    command += [f"--platform={platform}"] if platform else []
    command += ["--publish=127.0.0.1::8501"]
    command += ["--read-only"] + ([] if writable_tmp else ["--read-only-tmpfs=false"])
    command += [f"--env={key}={value}" for key, value in (env or {}).items()]
    command += [f"--volume={source}:{target}:ro" for source, target in volumes]
    container = Container(name, image)
    try:
        checked(*command, image, *flags)
        wait_ready(container, ready_timeout)
        yield container
    finally:
        container.remove()
