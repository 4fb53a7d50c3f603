"""The container images, built and run for real (podman): ``make test-image``, which .ci/run runs
after ``make test``; in ``make test`` these tests skip, saying so (building takes minutes).

Both targets of deploy/Dockerfile are built by scripts/image.py, as ``make image`` (the ONNX
image for amd64 and arm64 under one tag, a manifest list) and ``make image-tensorflow`` (this
machine's architecture only, here) build them, and run as deploy/README.md shows: the model named by
``MODEL_NAME`` / ``MODEL_BASE_PATH`` from a mounted directory, gRPC and REST published on the host,
flags appended to the image's (``podman run IMAGE --flag=...``), a read-only root file system.
From the host: predict over gRPC (this package's client and, in a process of its own, TF
Serving's official ``tensorflow_serving.apis`` client) and REST; the server runs as uid 10001;
every log line is in the project's log format; ``podman stop`` drains it and it exits 0 within the
grace. Each image's contents are listed (``podman run --entrypoint``): no compilers, tests, bench,
pip cache, build mounts or bytecode of test folders. Sizes and build times are printed at the end.

The arm64 image runs under emulation (qemu-user through binfmt_misc) by the same tag: its
contents are checked as above; it serves the baked-in demo model to REST, this package's client,
TF Serving's official client (Predict, GetModelStatus) and the official V2 client (tritonclient);
it reports ``platform.machine()`` as aarch64; ``podman stop`` drains it. The channel's stress test
(tests/channel/shm/stress.py) runs inside it too, on arm64's memory fences.

Where podman cannot run (no root, no apt-get to install it), they skip, saying why; so do the
arm64 tests where arm64 cannot be emulated and ``make test-image`` cannot set it up.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.client import Client
from tests.support import image_podman, tools, triton_client
from tests.support.image_podman import (
    EMULATED_READY_TIMEOUT_S,
    NATIVE_ARCH,
    BuiltImage,
    Container,
    http,
    run_in_image,
    running,
)
from tests.support.paths import REPO_ROOT, SUPPORT
from tests.support.triton_gateway import Calls

TF_CLIENT = SUPPORT / "image_tf_client_script.py"

if not image_podman.enabled():
    pytest.skip(image_podman.NOT_ENABLED, allow_module_level=True)

# A test's fixtures may build an image first (minutes when nothing is cached).
pytestmark = pytest.mark.timeout(image_podman.BUILD_TIMEOUT_S + 600)

# Sizes the images must stay under (MB, uncompressed, as `podman images` counts them).
SIZE_BUDGET_MB = {"onnx": 500, "tensorflow": 2500}
STOP_GRACE_S = 30
ARM64 = "arm64"
EMULATED_S = 900.0
"""Bound of one command in an emulated container (seconds)."""
STRESS_RUNS = 3000

# The README's 8x8 "0", flattened.
ZERO = [0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0, 0, 3, 15, 2, 0, 11, 8, 0, 0, 4, 12, 0]
ZERO += [0, 8, 8, 0, 0, 5, 8, 0, 0, 9, 8, 0, 0, 4, 11, 0, 1, 12, 7, 0, 0, 2, 14, 5, 10, 12, 0, 0]
ZERO += [0, 0, 6, 13, 10, 0, 0, 0]

TEXT_LINE = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [DIWEC] \d+ (gateway|worker-\d+|frontend-\d+) "
    r"[\w.]+\] \S"
)


@pytest.fixture(scope="module")
def podman_works() -> None:
    why = image_podman.unavailable()
    if why is not None:
        reason, must_fail = why
        if must_fail:
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def onnx_images(
    podman_works: None, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, BuiltImage]:
    """``make image``: the ONNX image of every architecture that runs here, under one tag."""
    arches = image_podman.IMAGE_SCRIPT.ARCHITECTURES["onnx"]
    runnable = [arch for arch in arches if image_podman.emulation_unavailable(arch) is None]
    return image_podman.build("onnx", tmp_path_factory.mktemp("build"), runnable)


@pytest.fixture(scope="module")
def onnx_image(onnx_images: dict[str, BuiltImage]) -> BuiltImage:
    """The ONNX image of this machine's architecture."""
    return onnx_images[NATIVE_ARCH]


@pytest.fixture(scope="module")
def arm64_image(onnx_images: dict[str, BuiltImage]) -> BuiltImage:
    why = image_podman.emulation_unavailable(ARM64)
    if why is not None:
        reason, must_fail = why
        if must_fail:
            pytest.fail(f"{reason}; `make test-image` (image-deps) should have set it up")
        pytest.skip(reason)
    return onnx_images[ARM64]


@pytest.fixture(scope="module")
def arm64_cpuinfo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A /proc/cpuinfo of arm64 cores for emulated containers (image_podman.write_arm64_cpuinfo:
    onnxruntime cannot start under emulation without one)."""
    return image_podman.write_arm64_cpuinfo(tmp_path_factory.mktemp("cpuinfo") / "cpuinfo")


@pytest.fixture(scope="module")
def tf_image(podman_works: None, tmp_path_factory: pytest.TempPathFactory) -> BuiltImage:
    """``make image-tensorflow``, for this machine's architecture only (the tests run no other)."""
    built = image_podman.build("tensorflow", tmp_path_factory.mktemp("build"), [NATIVE_ARCH])
    return built[NATIVE_ARCH]


@pytest.fixture(scope="module")
def onnx_container(
    onnx_image: BuiltImage, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Container]:
    """The demo model mounted as "mnist" under MODEL_BASE_PATH=/srv/models, a monitoring config
    mounted at /etc/tensorgate and named by an appended flag, one worker and two front ends (the
    supervisor is PID 1); nothing writable, not even /tmp."""
    root = tmp_path_factory.mktemp("onnx")
    shutil.copytree(REPO_ROOT / "models" / "digits", root / "mnist")
    (root / "config").mkdir()
    (root / "config" / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    with running(
        onnx_image.tag,
        "onnx",
        env={"MODEL_NAME": "mnist", "MODEL_BASE_PATH": "/srv/models"},
        volumes=[(root / "mnist", "/srv/models/mnist"), (root / "config", "/etc/tensorgate")],
        flags=[
            "--workers=1",
            "--frontends=2",
            "--monitoring_config_file=/etc/tensorgate/monitoring.config",
        ],
        writable_tmp=False,
    ) as container:
        yield container


@pytest.fixture(scope="module")
def tf_container(
    tf_image: BuiltImage, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Container]:
    """TF Serving's half_plus_two SavedModel (built here) mounted at /models/half_plus_two, the
    image's default MODEL_BASE_PATH, with JSON logs asked for by an appended flag, on a read-only
    root with podman's tmpfs at /tmp: ``import tensorflow`` needs a usable temporary directory
    (absl's test module, which TensorFlow imports, asks for one), as an ``emptyDir`` gives in
    Kubernetes."""
    from tests.support.tf_models_script import models_root

    models = models_root(tmp_path_factory.mktemp("tf"))
    with running(
        tf_image.tag,
        "tf",
        env={"MODEL_NAME": "half_plus_two"},
        volumes=[(models / "half_plus_two", "/models/half_plus_two")],
        flags=["--workers=1", "--frontends=1", "--log_format=json"],
    ) as container:
        yield container


def official_client(target: str, model: str, inputs: dict[str, np.ndarray], tmp: Path) -> dict:
    """Predict and GetModelStatus by tensorflow_serving.apis, in a process of its own."""
    np.savez(tmp / "inputs.npz", **inputs)  # type: ignore[arg-type]  # stub: as allow_pickle
    done = subprocess.run(
        [sys.executable, str(TF_CLIENT), target, model, str(tmp / "inputs.npz"), str(tmp / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict = json.loads((tmp / "out").read_text())
    return result


# --- what the images hold ----------------------------------------------------------------------

LISTING = r"""
site=/opt/tensorgate/lib/python3.11/site-packages
echo "compilers=$(for c in gcc cc c++ g++ clang make ld as; do command -v $c; done | xargs)"
echo "site=$(ls $site | xargs)"
echo "test_bytecode=$(find / -xdev -type d -name __pycache__ \
    \( -path '*/tests/*' -o -path '*/test/*' \) | head -3 | xargs)"
echo "wheels=$(find / -xdev -name '*.whl' -not -path '/usr/share/python-wheels/*' \
    | head -3 | xargs)"
echo "caches=$(ls -d /root/.cache /home/*/.cache /tmp/* /var/tmp/* \
    /var/lib/apt/lists/*_Packages 2>/dev/null | xargs)"
echo "build_leftovers=$(ls -d /src /opt/pypi /opt/pypi-more /opt/wheels /etc/pip.conf \
    /etc/xdg/pip 2>/dev/null | xargs)"
echo "models=$(find /models -type f | xargs)"
echo "user=$(id -u tensorgate)"
python - <<'EOF'
# Modules of the virtualenv (but test folders) whose bytecode is missing or out of date.
import importlib.util, pathlib
stale, total = [], 0
for py in pathlib.Path("/opt/tensorgate/lib").rglob("*.py"):
    if "/tests/" in str(py) or "/test/" in str(py):
        continue
    total += 1
    pyc = pathlib.Path(importlib.util.cache_from_source(str(py)))
    head = pyc.read_bytes()[:16] if pyc.exists() else b""
    info = py.stat()
    source = (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    source += (info.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    if not head or (head[4:8] == bytes(4) and head[8:16] != source):
        stale.append(str(py))
print(f"modules={total}")
print("stale_bytecode=" + " ".join(stale[:5]))
EOF
"""
"""Run as root in the image: what it holds, one ``key=value`` a line."""


def emulated(image: BuiltImage) -> dict[str, Any]:
    """How to run ``image`` when it is not this machine's architecture: its platform of the
    manifest list, and time for emulation."""
    if image.arch == NATIVE_ARCH:
        return {}
    return {"platform": image.platform, "timeout": EMULATED_S}


def listing(image: BuiltImage) -> dict[str, str]:
    out = run_in_image(image.tag, LISTING, user="0", **emulated(image))
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def check_contents(image: BuiltImage, tensorflow: bool) -> None:
    found = listing(image)
    assert found["compilers"] == "", found
    site = set(found["site"].split())
    assert {"gateway", "workers", "channel"} <= site, site
    assert not site & {"tests", "bench", "scripts", "docs", "protos"}, site
    assert ("tensorflow" in site) == tensorflow, site
    assert ("tensorflow_serving" in site) == tensorflow, site
    for key in ("test_bytecode", "wheels", "caches", "build_leftovers", "stale_bytecode"):
        assert found[key] == "", (key, found[key])
    assert found["models"] == "/models/digits/1/model.onnx"
    assert int(found["modules"]) > 1000  # each compiled at build: none compiles at a start
    assert found["user"] == "10001"
    assert image.size_mb < SIZE_BUDGET_MB[image.target], f"{image.tag}: {image.size_mb:.0f} MB"


def test_onnx_image_holds_what_serving_needs_and_nothing_else(onnx_image: BuiltImage) -> None:
    check_contents(onnx_image, tensorflow=False)


def test_tensorflow_image_holds_what_serving_needs_and_nothing_else(tf_image: BuiltImage) -> None:
    check_contents(tf_image, tensorflow=True)
    # TensorFlow imports in it, and the base's own Python is the one the virtualenv runs on.
    out = run_in_image(
        tf_image.tag,
        "TF_CPP_MIN_LOG_LEVEL=2 python -c 'import tensorflow as t; print(t.__version__)'",
    )
    assert out.strip() == "2.21.0"


# --- the ONNX image, running -------------------------------------------------------------------


def test_grpc_and_rest_predict_on_the_mounted_model(onnx_container: Container) -> None:
    status, body, _ = http(onnx_container.rest_url + "/v1/models/mnist")
    assert status == 200, body
    assert json.loads(body)["model_version_status"][0]["state"] == "AVAILABLE"

    status, body, _ = http(
        onnx_container.rest_url + "/v1/models/mnist:predict", {"instances": [ZERO]}
    )
    assert status == 200, body
    (rest,) = json.loads(body)["predictions"]
    assert rest["label"] == 0

    with Client(onnx_container.grpc_target, timeout=30) as client:
        outputs = client.predict("mnist", {"images": np.array([ZERO], np.float32)})
    assert outputs["label"].tolist() == [0]
    np.testing.assert_allclose(outputs["probabilities"][0], rest["probabilities"], rtol=1e-6)


@pytest.mark.tfclient
def test_official_tf_serving_client_on_port_8500(onnx_container: Container, tmp_path: Path) -> None:
    result = official_client(
        onnx_container.grpc_target, "mnist", {"images": np.array([ZERO], np.float32)}, tmp_path
    )
    assert result["outputs"]["label"] == {"dtype": "int64", "shape": [1], "value": [0]}
    assert result["outputs"]["probabilities"]["shape"] == [1, 10]
    assert result["version"] == 1
    assert result["status"] == [[1, "AVAILABLE"]]


def test_appended_flags_are_applied(onnx_container: Container) -> None:
    """--monitoring_config_file (a mounted file), --workers=1 and --frontends=2 came after the
    image's flags: one worker on the page, two front ends serving (each scrape is the whole
    server's page, whichever front end answers)."""
    status, body, _ = http(onnx_container.rest_url + "/monitoring/prometheus/metrics")
    assert status == 200, body
    page = body.decode()
    assert ":tensorflow:serving:request_count" in page
    workers = set(re.findall(r'tensorgate_worker_info\{[^}]*worker="(\d+)"', page))
    assert workers == {"0"}, workers


def test_runs_unprivileged_on_a_read_only_root(onnx_container: Container) -> None:
    assert onnx_container.inspect("{{.HostConfig.ReadonlyRootfs}}") == "true"
    assert onnx_container.inspect("{{.Config.User}}") == "10001"
    # The supervisor (PID 1, the entry point exec'd), its front ends and its workers.
    done = onnx_container.exec("sh", "-c", "grep -h '^Uid:' /proc/[0-9]*/status")
    assert done.returncode == 0, done.stderr
    uids = {line.split()[1] for line in done.stdout.splitlines()}
    assert uids == {"10001"}, done.stdout
    comm = onnx_container.exec("cat", "/proc/1/cmdline").stdout.split("\0")
    assert comm[1].endswith("/tensorgate") and "--model_name=mnist" in comm, comm
    for path in ("/opt/tensorgate/written", "/tmp/written"):
        done = onnx_container.exec("touch", path)
        assert done.returncode != 0 and "Read-only file system" in done.stderr, done


def test_logs_are_in_the_project_format(onnx_container: Container) -> None:
    lines = [line for line in onnx_container.logs().splitlines() if line.strip()]
    assert lines
    strays = [line for line in lines if not TEXT_LINE.match(line)]
    assert not strays, strays
    roles = {TEXT_LINE.match(line).group(1) for line in lines}  # type: ignore[union-attr]
    assert roles == {"gateway", "worker-0", "frontend-0", "frontend-1"}, roles


def test_podman_stop_drains_and_exits_0_within_the_grace(onnx_container: Container) -> None:
    """Last of the ONNX container's tests: it stops the container."""
    code, seconds = onnx_container.stop(STOP_GRACE_S)
    logs = onnx_container.logs()
    assert code == 0, logs
    assert seconds < STOP_GRACE_S, seconds
    assert "stop signal: draining" in logs, logs


# --- the TensorFlow image, running -------------------------------------------------------------


def test_tensorflow_image_serves_a_saved_model(tf_container: Container) -> None:
    status, body, _ = http(
        tf_container.rest_url + "/v1/models/half_plus_two:predict", {"instances": [1.0, 2.0, 5.0]}
    )
    assert status == 200, body
    assert json.loads(body) == {"predictions": [2.5, 3.0, 4.5]}
    with Client(tf_container.grpc_target, timeout=60) as client:
        outputs = client.predict("half_plus_two", {"x": np.array([[1.0], [3.0]], np.float32)})
    assert outputs["y"].tolist() == [[2.5], [3.5]]


@pytest.mark.tfclient
def test_tensorflow_image_and_the_official_client(tf_container: Container, tmp_path: Path) -> None:
    result = official_client(
        tf_container.grpc_target, "half_plus_two", {"x": np.array([[4.0]], np.float32)}, tmp_path
    )
    assert result["outputs"] == {"y": {"dtype": "float32", "shape": [1, 1], "value": [4.0]}}
    assert result["status"] == [[123, "AVAILABLE"]]


def test_tensorflow_image_logs_json_and_stops_cleanly(tf_container: Container) -> None:
    """--log_format=json appended: every line one JSON record of the project's fields (TensorFlow's
    own start-up noise included, as the workers capture it); then `podman stop` drains."""
    code, seconds = tf_container.stop(STOP_GRACE_S)
    lines = [line for line in tf_container.logs().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    for record in records:
        assert {"time", "level", "pid", "process", "logger", "message"} <= set(record), record
    assert {r["process"] for r in records} == {"gateway", "worker-0"}
    assert any("loaded half_plus_two" in r["message"] for r in records), lines
    assert code == 0, lines
    assert seconds < STOP_GRACE_S, seconds
    assert any(r["message"] == "stop signal: draining" for r in records), lines


# --- the arm64 image, under emulation -----------------------------------------------------------


@pytest.fixture(scope="module")
def arm64_container(arm64_image: BuiltImage, arm64_cpuinfo: Path) -> Iterator[Container]:
    """The arm64 image of the one tag (``--platform=linux/arm64``) under emulation, serving its
    baked-in demo model (``-e MODEL_NAME=digits``) with one worker and two front ends."""
    with running(
        arm64_image.tag,
        "arm64",
        env={"MODEL_NAME": "digits"},
        volumes=[(arm64_cpuinfo, "/proc/cpuinfo")],
        flags=["--workers=1", "--frontends=2"],
        platform=arm64_image.platform,
        ready_timeout=EMULATED_READY_TIMEOUT_S,
    ) as container:
        yield container


def test_one_tag_is_a_manifest_list_of_amd64_and_arm64(arm64_image: BuiltImage) -> None:
    platforms = image_podman.manifest_platforms(arm64_image.tag)
    assert sorted(platforms) == ["linux/amd64", "linux/arm64"], platforms


def test_arm64_image_holds_what_serving_needs_and_nothing_else(arm64_image: BuiltImage) -> None:
    assert (
        image_podman.checked(
            "image", "inspect", "--format", "{{.Architecture}}", f"{arm64_image.tag}-{ARM64}"
        ).strip()
        == ARM64
    )
    check_contents(arm64_image, tensorflow=False)


def test_arm64_container_runs_on_aarch64(arm64_container: Container) -> None:
    """Every process of the server runs the arm64 interpreter: the container's Python says so."""
    done = arm64_container.exec(
        "python", "-c", "import platform, sys; print(platform.machine(), sys.executable)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["aarch64", "/opt/tensorgate/bin/python"], done.stdout


def test_arm64_serves_the_demo_model_over_rest_and_grpc(arm64_container: Container) -> None:
    status, body, _ = http(
        arm64_container.rest_url + "/v1/models/digits:predict", {"instances": [ZERO]}
    )
    assert status == 200, body
    (rest,) = json.loads(body)["predictions"]
    assert rest["label"] == 0
    with Client(arm64_container.grpc_target, timeout=60) as client:
        outputs = client.predict("digits", {"images": np.array([ZERO], np.float32)})
    assert outputs["label"].tolist() == [0]
    np.testing.assert_allclose(outputs["probabilities"][0], rest["probabilities"], rtol=1e-6)


@pytest.mark.tfclient
def test_arm64_answers_the_official_tf_serving_client(
    arm64_container: Container, tmp_path: Path
) -> None:
    result = official_client(
        arm64_container.grpc_target, "digits", {"images": np.array([ZERO], np.float32)}, tmp_path
    )
    assert result["outputs"]["label"] == {"dtype": "int64", "shape": [1], "value": [0]}
    assert result["outputs"]["probabilities"]["shape"] == [1, 10]
    assert result["version"] == 1
    assert result["status"] == [[1, "AVAILABLE"]]


async def test_arm64_answers_the_official_v2_client(
    arm64_container: Container, tmp_path: Path
) -> None:
    tools.package("tritonclient")
    images = ("FP32", np.array([ZERO], np.float32))
    plan = (
        Calls()
        .op("ready", "grpc", "is_model_ready", model="digits")
        .infer("grpc", "grpc", "digits", {"images": images})
        .infer("http", "http", "digits", {"images": images}, binary=True)
    )
    rest_target = arm64_container.rest_url.removeprefix("http://")
    results, outputs = await triton_client.run_calls(
        arm64_container.grpc_target, rest_target, plan.calls, plan.arrays, tmp_path
    )
    assert results["ready"] == {"ok": True, "result": True}, results["ready"]
    for call in ("grpc", "http"):
        assert results[call]["ok"], results[call]
        assert outputs[f"{call}.label"].tolist() == [0]


def test_arm64_container_drains_on_sigterm(arm64_container: Container) -> None:
    """Last of the arm64 container's tests: ``podman stop`` (SIGTERM) drains it, and it exits 0
    within the grace."""
    code, seconds = arm64_container.stop(STOP_GRACE_S)
    logs = arm64_container.logs()
    assert code == 0, logs
    assert seconds < STOP_GRACE_S, seconds
    assert "stop signal: draining" in logs, logs


def test_channel_stress_test_passes_inside_the_arm64_image(arm64_image: BuiltImage) -> None:
    """tests/channel/shm/stress.py (mounted) on the image's own channel package and numpy, as the
    image's user, on arm64's fences (``dmb``), under emulation."""
    out = run_in_image(
        arm64_image.tag,
        f"cd /src && exec python -m tests.channel.shm.stress --runs={STRESS_RUNS}",
        platform=arm64_image.platform,
        volumes=[(REPO_ROOT / "tests", "/src/tests")],
        timeout=EMULATED_S,
    )
    assert out.startswith(f"{STRESS_RUNS} runs in "), out
    assert " on aarch64, fences: arm64: " in out and "dmb ish" in out, out
