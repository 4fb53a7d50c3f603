"""Autoscaling on queue depth: every shape renders with a HorizontalPodAutoscaler on the per-pod
calls in flight (served by prometheus-adapter) and, in ``<shape>-keda``, with a KEDA ScaledObject
instead; each validates against its schema (Kubernetes' for the HPA, KEDA's ScaledObject and the
adapter's config format: tests/deploy/schemas/README.md), and all three name the same series and
target. The adapter's and KEDA's queries are evaluated against a real Prometheus in
tests/deploy/test_observability_e2e.py."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.test_k8s import K8S, OVERLAYS, kubectl, shapes
from tests.support.paths import REPO_ROOT

SCHEMAS = Path(__file__).parent / "schemas"
ADAPTER_CONFIG = REPO_ROOT / "deploy" / "observability" / "prometheus-adapter" / "config.yaml"
KEDA_SCHEMA = json.loads((SCHEMAS / "keda-v2-scaledobject-v1alpha1.json").read_text())
ADAPTER_SCHEMA = json.loads((SCHEMAS / "prometheus-adapter-config.json").read_text())


def render(overlay: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [kubectl(), "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(yaml.safe_load_all(done.stdout))


def adapter_rule() -> dict[str, Any]:
    (rule,) = yaml.safe_load(ADAPTER_CONFIG.read_text())["rules"]
    return dict(rule)


def test_the_adapter_config_validates_and_serves_the_per_pod_metric() -> None:
    config = yaml.safe_load(ADAPTER_CONFIG.read_text())
    jsonschema.validate(config, ADAPTER_SCHEMA)
    rule = adapter_rule()
    assert rule["name"]["as"] == shapes.QUEUE_METRIC
    assert rule["seriesQuery"].startswith(shapes.QUEUE_METRIC + "{")
    assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}
    broken = copy.deepcopy(config)
    broken["rules"][0]["metricQuery"] = broken["rules"][0].pop("metricsQuery")  # a typo
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, ADAPTER_SCHEMA)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_hpa_scales_on_calls_in_flight_per_pod(overlay: str) -> None:
    settings = shapes.derive(next(s for s in shapes.SHAPES if s.name == overlay))
    (hpa,) = [d for d in render(overlay) if d["kind"] == "HorizontalPodAutoscaler"]
    pods, cpu = hpa["spec"]["metrics"]
    assert pods["type"] == "Pods" and cpu["type"] == "Resource"
    assert pods["pods"]["metric"]["name"] == adapter_rule()["name"]["as"]
    assert pods["pods"]["target"] == {
        "type": "AverageValue",
        "averageValue": str(settings.workers * shapes.QUEUE_TARGET_PER_WORKER),
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (
        settings.min_replicas,
        settings.max_replicas,
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_keda_overlay_renders_a_valid_scaled_object_instead_of_the_hpa(
    overlay: str, tmp_path: Path
) -> None:
    settings = shapes.derive(next(s for s in shapes.SHAPES if s.name == overlay))
    docs = render(f"{overlay}-keda")
    (scaled,) = [d for d in docs if d["kind"] == "ScaledObject"]
    jsonschema.validate(scaled, KEDA_SCHEMA)
    rest = [d for d in docs if d["kind"] != "ScaledObject"]
    assert {d["kind"] for d in rest} == {
        "ConfigMap",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
    }
    manifests = tmp_path / "rest.yaml"
    manifests.write_text(yaml.safe_dump_all(rest))
    validate = shutil.which("kubernetes-validate") or str(
        Path(sys.executable).parent / "kubernetes-validate"
    )
    done = subprocess.run(
        [validate, "--strict", "--quiet", str(manifests)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    spec = scaled["spec"]
    (deployment,) = [d for d in rest if d["kind"] == "Deployment"]
    assert spec["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (
        settings.min_replicas,
        settings.max_replicas,
    )
    prometheus, cpu = spec["triggers"]
    assert prometheus["metadata"]["query"] == shapes.keda_query()
    assert prometheus["metadata"]["threshold"] == str(settings.queue_target)
    assert deployment["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == (
        "tensorgate"  # what the query's app_kubernetes_io_name matcher selects
    )
    assert cpu["type"] == "cpu"


def test_the_keda_schema_rejects_what_keda_would() -> None:
    docs = render(f"{OVERLAYS[0]}-keda")
    (scaled,) = [d for d in docs if d["kind"] == "ScaledObject"]
    for damage in (
        lambda s: s["spec"]["triggers"][0]["metadata"].pop("query"),
        lambda s: s["spec"]["triggers"][0]["metadata"].update(threshold=2),  # not a string
        lambda s: s["spec"].update(maxReplicas=3),  # the HPA's name, not KEDA's
        lambda s: s["spec"]["scaleTargetRef"].pop("name"),
    ):
        broken = copy.deepcopy(scaled)
        damage(broken)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, KEDA_SCHEMA)
