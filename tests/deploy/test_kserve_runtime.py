"""deploy/kserve: the ClusterServingRuntime renders offline (kubectl kustomize), validates strictly
against KServe's published CRD schema (vendored: tests/deploy/schemas/README.md), passes the
rules KServe's admission webhook adds, and its container command line is one tensorgate takes,
serving KServe's model mount on KServe's ports."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gateway.config.flags import parse_flags
from tests.support import tools
from tests.support.paths import REPO_ROOT

KSERVE = REPO_ROOT / "deploy" / "kserve"
SCHEMA = Path(__file__).parent / "schemas" / "kserve-v0.20.0-clusterservingruntime-v1alpha1.json"
# KServe's constants (pkg/constants/constants.go, v0.20.0).
PROTOCOLS = {"v1", "v2", "grpc-v1", "grpc-v2"}
CONTAINER_NAME = "kserve-container"
MODEL_MOUNT = "/mnt/models"
HTTP_PORT = 8080  # InferenceServiceDefaultHttpPort
GRPC_PORT = 9000  # what KServe's runtimes (TF Serving, Triton, MLServer, OpenVINO) serve gRPC on
DNS_1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@pytest.fixture(scope="module")
def runtime() -> dict[str, Any]:
    kubectl = tools.executable("kubectl")
    done = subprocess.run(
        [kubectl, "kustomize", str(KSERVE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (document,) = list(yaml.safe_load_all(done.stdout))
    assert isinstance(document, dict)
    return document


def _strict(schema: Any) -> Any:
    """The schema with unknown fields refused, as the API server's strict field validation does
    (a structural schema prunes or refuses what it does not declare)."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    strict = {key: _strict(value) for key, value in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        strict["additionalProperties"] = False
    return strict


def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(_strict(schema))


def test_validates_against_kserve_crd_schema(runtime: dict[str, Any]) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in _validator().iter_errors(runtime)]
    assert not errors
    assert runtime["apiVersion"] == "serving.kserve.io/v1alpha1"
    assert runtime["kind"] == "ClusterServingRuntime"
    assert DNS_1123.fullmatch(runtime["metadata"]["name"])
    assert "namespace" not in runtime["metadata"]  # cluster-scoped


def test_the_strict_schema_refuses_what_kserve_would() -> None:
    document = yaml.safe_load((KSERVE / "clusterservingruntime.yaml").read_text())
    validator = _validator()
    assert validator.is_valid(document)
    for path, value in (
        (("spec", "supportedModelFormats", 0, "priority"), 0),  # minimum 1
        (("spec", "protocolVersions"), "v2"),  # an array
        (("spec", "containers", 0, "imagePullPolicy2"), "Always"),  # unknown field
        (("spec", "autoSelect"), True),  # unknown field
    ):
        broken = copy.deepcopy(document)
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        assert not validator.is_valid(broken), path
    del document["spec"]["containers"]
    assert not validator.is_valid(document)  # required


def test_formats_and_protocols(runtime: dict[str, Any]) -> None:
    spec = runtime["spec"]
    assert set(spec["protocolVersions"]) == PROTOCOLS
    formats = {(f["name"], f["version"]) for f in spec["supportedModelFormats"]}
    assert formats == {("tensorflow", "1"), ("tensorflow", "2"), ("onnx", "1")}
    assert all(f["autoSelect"] for f in spec["supportedModelFormats"])
    # KServe's webhook denies a runtime whose format, version and priority equal another
    # autoSelect runtime's on a shared protocol; KServe's own runtimes hold 1-3 for these.
    assert all("priority" not in f for f in spec["supportedModelFormats"])


def test_container_serves_kserve_mount_on_kserve_ports(runtime: dict[str, Any]) -> None:
    (container,) = runtime["spec"]["containers"]
    assert container["name"] == CONTAINER_NAME
    assert container["command"] == ["tensorgate"]
    args = [arg.replace("{{.Name}}", "my-model") for arg in container["args"]]
    settings = parse_flags(args)
    assert settings.model_name == "my-model"
    assert settings.model_base_path == MODEL_MOUNT
    assert (settings.rest_api_port, settings.port) == (HTTP_PORT, GRPC_PORT)
    assert container["resources"]["limits"] == container["resources"]["requests"]
    security = container["securityContext"]
    assert security["runAsNonRoot"] and not security["allowPrivilegeEscalation"]


def test_image_is_the_tensorflow_build_of_the_deployed_tag(runtime: dict[str, Any]) -> None:
    base = yaml.safe_load(
        (REPO_ROOT / "deploy" / "k8s" / "base" / "kustomization.yaml").read_text()
    )
    (image,) = base["images"]
    (container,) = runtime["spec"]["containers"]
    assert container["image"] == f"{image['name']}:{image['newTag']}-tf"
