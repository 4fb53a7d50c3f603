"""deploy/k8s/examples/object-storage: models in object stores on Kubernetes. It renders
offline and validates strictly like the overlays, and what it tells the gateway holds: the pod
runs as the annotated ServiceAccount (EKS IRSA, GKE and AKS workload identity), takes keys only
from the Secret through the SDKs' standard variables (never a flag), serves object URLs, and
caches versions on a writable volume larger than the cache's bound."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import text_format

from gateway.config.flags import parse_flags
from gateway.config.model_config import ModelServerConfig, model_specs
from gateway.storage.urls import is_url, parse_url
from tests.support import tools
from tests.support.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "deploy" / "k8s" / "examples" / "object-storage"
GIB = 1024**3


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    done = subprocess.run(
        [tools.executable("kubectl"), "kustomize", str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path_factory.mktemp("k8s") / "object-storage.yaml"
    out.write_text(done.stdout)
    return out


def documents(path: Path) -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(path.read_text()) if doc}


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
    assert {"ServiceAccount", "Secret", "Deployment", "ConfigMap"} <= set(documents(rendered))


def test_the_pod_has_a_cloud_identity_and_keys_only_in_standard_variables(rendered: Path) -> None:
    docs = documents(rendered)
    account = docs["ServiceAccount"]["metadata"]
    annotations = account["annotations"]
    assert "eks.amazonaws.com/role-arn" in annotations
    assert "iam.gke.io/gcp-service-account" in annotations
    assert "azure.workload.identity/client-id" in annotations
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["name"]
    (container,) = pod["containers"]
    secret = docs["Secret"]
    assert container["envFrom"] == [
        {"secretRef": {"name": secret["metadata"]["name"], "optional": True}}
    ]
    assert "env" not in container
    keys = set(secret["stringData"])
    assert keys <= {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
        "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "S3_ENDPOINT", "S3_USE_HTTPS", "S3_VERIFY_SSL",
        "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_KEY",
    }  # fmt: skip
    for value in secret["stringData"].values():
        assert not any(value in arg for arg in container["args"])


def test_object_urls_are_served_and_cached_on_a_writable_volume(rendered: Path) -> None:
    docs = documents(rendered)
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    settings = parse_flags(container["args"])
    config_file = Path(settings.model_config_file).name
    text = docs["ConfigMap"]["data"][config_file]
    specs = model_specs(text_format.Parse(text, ModelServerConfig()))
    assert specs and all(is_url(s.base_path) for s in specs)
    for spec in specs:
        parse_url(spec.base_path)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    mount = mounts[settings.model_cache_dir]
    assert not mount.get("readOnly", False)
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    limit = str(volume["emptyDir"]["sizeLimit"])
    assert limit.endswith("Gi")
    assert 0 < settings.model_cache_max_bytes < int(limit.removesuffix("Gi")) * GIB
