"""deploy/k8s: the overlays are what deploy/k8s/shapes.py derives, every overlay renders offline
(kubectl kustomize) and validates strictly against a recent Kubernetes schema
(kubernetes-validate, bundled schemas), and what the manifests tell the gateway is coherent: its
flags parse, the workers fit the CPU limit, the drain fits the termination grace, the probes and
scrape annotations point at the ports and paths the flags and config files set, and the rendered
pod's command line serves the model."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from gateway.client import Client
from gateway.config.batching_options import load_options
from gateway.config.flags import parse_flags
from gateway.config.model_config import (
    load_model_server_config,
    load_monitoring_config,
    model_specs,
)
from gateway.config.settings_field import MIB
from gateway.config.sizing import resolve_frontends, resolve_worker_threads
from gateway.worker_pool.pool import PoolOptions
from tests.support import tools
from tests.support.gateway_proc import start_gateway
from tests.support.paths import REPO_ROOT

K8S = REPO_ROOT / "deploy" / "k8s"
CONFIG_DIR = K8S / "base" / "config"
MOUNT = "/etc/tensorgate"


def load_shapes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("k8s_shapes", K8S / "shapes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


shapes = load_shapes()
WORKER_STOP_S = next(
    f.default for f in dataclasses.fields(PoolOptions) if f.name == "stop_timeout_s"
)
OVERLAYS = [shape.name for shape in shapes.SHAPES]


def kubectl() -> str:
    return tools.executable("kubectl")


@pytest.fixture(scope="module", params=OVERLAYS)
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The overlay rendered by ``kubectl kustomize`` into a file."""
    done = subprocess.run(
        [kubectl(), "kustomize", str(K8S / "overlays" / request.param)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path_factory.mktemp("k8s") / f"{request.param}.yaml"
    out.write_text(done.stdout)
    return out


def documents(path: Path) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(path.read_text()) if doc}


def container(docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (only,) = docs["Deployment"]["spec"]["template"]["spec"]["containers"]
    result: dict[str, Any] = only
    return result


def flag_values(args: list[str]) -> dict[str, str]:
    return dict(arg[2:].partition("=")[::2] for arg in args)


def test_committed_overlays_are_the_derived_ones(tmp_path: Path) -> None:
    shapes.write_overlays(tmp_path)
    committed = sorted(p.relative_to(K8S / "overlays") for p in (K8S / "overlays").rglob("*"))
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert committed == generated, "run `make k8s-overlays`"
    for path in generated:
        if (tmp_path / path).is_file():
            assert (K8S / "overlays" / path).read_text() == (tmp_path / path).read_text(), path


def test_rule_never_oversubscribes_and_leaves_memory_for_models() -> None:
    for shape in shapes.SHAPES:
        s = shapes.derive(shape)
        assert s.workers * s.intra_op <= s.millicpu // 1000 < shape.vcpus
        assert s.memory_mib < shape.memory_gib * 1024
        arenas = s.workers * (s.frontends + 1) * 2 * s.arena_mib  # a channel per front end
        assert arenas <= s.memory_mib * shapes.ARENA_SHARE
        assert s.frontends >= max(2, s.millicpu / 1000)  # one event loop per CPU, rounded up
    bigger = [shapes.derive(shape) for shape in shapes.SHAPES]
    assert [s.workers for s in bigger] == sorted(s.workers for s in bigger)


def test_deploy_readme_quotes_the_derived_table() -> None:
    assert shapes.table() in (REPO_ROOT / "deploy" / "README.md").read_text()


def test_renders_and_validates_strictly(rendered: Path) -> None:
    validate = shutil.which("kubernetes-validate") or str(
        Path(sys.executable).parent / "kubernetes-validate"
    )
    done = subprocess.run(
        [validate, "--strict", "--quiet", str(rendered)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    kinds = set(documents(rendered))
    assert kinds == {
        "ConfigMap",
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
    }
    services = [d for d in yaml.safe_load_all(rendered.read_text()) if d["kind"] == "Service"]
    assert any(s["spec"].get("clusterIP") == "None" for s in services), "a headless Service"


def test_flags_fit_the_shape(rendered: Path) -> None:
    docs = documents(rendered)
    c = container(docs)
    assert c["command"] == ["tensorgate"]
    settings = parse_flags(c["args"])
    limits, requests = c["resources"]["limits"], c["resources"]["requests"]
    assert limits == requests, "Guaranteed QoS: requests = limits"
    cpu = str(limits["cpu"])
    millicpu = int(cpu[:-1]) if cpu.endswith("m") else 1000 * int(cpu)
    cpus = max(1, math.floor(millicpu / 1000))  # what available_cpus() reads from the quota
    workers, intra, inter = resolve_worker_threads(settings, cpus)
    assert workers * intra <= cpus
    assert (workers, intra, inter) == (settings.workers, 1, 1)
    memory = int(str(limits["memory"]).removesuffix("Mi")) * MIB
    frontends = resolve_frontends(settings, cpus)
    assert frontends == settings.frontends >= 2
    assert workers * (frontends + 1) * 2 * settings.worker_arena_bytes < memory
    hpa = docs["HorizontalPodAutoscaler"]["spec"]
    shape = next(s for s in shapes.SHAPES if rendered.stem == s.name)
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (shape.nodes, 2 * shape.nodes)


def test_one_image_tag_runs_on_the_architecture_of_the_shape(rendered: Path) -> None:
    """Every overlay names the same image (one tag for amd64 and arm64) and tolerates GKE's taint
    of Arm nodes; an arm64 shape's pods select arm64 nodes, the amd64 shapes' either kind."""
    docs = documents(rendered)
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    shape = next(s for s in shapes.SHAPES if rendered.stem == s.name)
    assert container(docs)["image"] == "tensorgate:0.1.0"
    taint = {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}
    assert any(t.items() >= taint.items() and t["operator"] == "Equal" for t in pod["tolerations"])
    if shape.arch == "amd64":
        assert "nodeSelector" not in pod, pod["nodeSelector"]
    else:
        assert pod["nodeSelector"] == {"kubernetes.io/arch": shape.arch}


def test_there_is_an_arm64_shape() -> None:
    assert {shape.arch for shape in shapes.SHAPES} == {"amd64", "arm64"}


def test_drain_fits_the_termination_grace_and_probes_use_grpc_health(rendered: Path) -> None:
    docs = documents(rendered)
    pod = docs["Deployment"]["spec"]["template"]
    c = container(docs)
    settings = parse_flags(c["args"])
    pre_stop = c["lifecycle"]["preStop"]["sleep"]["seconds"]
    drain = pre_stop + settings.shutdown_grace_seconds + WORKER_STOP_S
    assert pod["spec"]["terminationGracePeriodSeconds"] > drain
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["grpc"]["port"] == settings.port
    options: dict[str, Any] = dict(settings.grpc_channel_options)
    assert options["grpc.max_connection_age_ms"] > 0
    assert options["grpc.max_connection_age_grace_ms"] / 1000 > settings.shutdown_grace_seconds
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert (ports["grpc"], ports["http"]) == (settings.port, settings.rest_api_port)


def test_config_files_parse_and_match_the_scrape_annotations(rendered: Path) -> None:
    docs = documents(rendered)
    c = container(docs)
    flags = flag_values(c["args"])
    configmap = docs["ConfigMap"]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts["config"] == MOUNT
    for flag in ("model_config_file", "batching_parameters_file", "monitoring_config_file"):
        name = Path(flags[flag]).name
        assert flags[flag] == f"{MOUNT}/{name}" and name in configmap["data"]
        assert configmap["data"][name] == (CONFIG_DIR / name).read_text()
    specs = model_specs(load_model_server_config(CONFIG_DIR / "models.config"))
    assert [(s.name, s.base_path) for s in specs] == [("digits", "/models/digits")]
    assert load_options(str(CONFIG_DIR / "batching.config")).max_batch_size == 32
    prometheus = load_monitoring_config(CONFIG_DIR / "monitoring.config").prometheus_config
    annotations = docs["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert prometheus.enable and annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == prometheus.path
    assert annotations["prometheus.io/port"] == flags["rest_api_port"]


@pytest.fixture
def pod_command_line(tmp_path: Path) -> Iterator[list[str]]:
    """The 2-vCPU overlay's container command line, with the ConfigMap's files and the image's
    demo model at local paths instead of /etc/tensorgate and /models."""
    done = subprocess.run(
        [kubectl(), "kustomize", str(K8S / "overlays" / OVERLAYS[0])],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    docs = {d["kind"]: d for d in yaml.safe_load_all(done.stdout) if d}
    for name, text in docs["ConfigMap"]["data"].items():
        local = text.replace("/models/digits", str(REPO_ROOT / "models" / "digits"))
        (tmp_path / name).write_text(local)
    c = container(docs)
    args = [a.replace(MOUNT, str(tmp_path)) for a in c["args"]]
    yield [*c["command"], *args]


def test_the_pod_command_line_serves_the_model(pod_command_line: list[str], tmp_path: Path) -> None:
    _, *args = pod_command_line
    # Ports chosen by the OS instead of 8500/8501 (later flags win).
    gateway = start_gateway([*args, "--port=0", "--rest_api_port=0"], tmp_path)
    try:
        with Client(gateway.target, timeout=30) as client:
            outputs = client.predict("digits", {"images": np.zeros((2, 64), np.float32)})
        assert outputs["label"].shape == (2,)
    finally:
        code = gateway.stop(signal.SIGTERM)
    assert code == 0, gateway.log()
