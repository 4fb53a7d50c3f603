"""REST through a transcoding proxy: ``make descriptor-set``'s descriptor sets load every service
tensorgate serves, with every import; the HTTP rules (a gRPC API service configuration) parse as
one, name existing methods and fields, and are carried into the annotated set Envoy reads; the
Envoy config names the same services and descriptor; and each example request of
deploy/transcoding/examples.json, mapped onto its gRPC request by its rule the way a transcoder
maps it (path variables, query parameters, body in protobuf's JSON mapping; done here in Python),
is answered by a real gateway, the answer read back as JSON.

The same requests also go as HTTP JSON through a real transcoder: grpc-gateway, generated from
the rules and built offline from Debian's Go packages (scripts/grpc_gateway.sh). Envoy is not run
(no Debian package)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.api import annotations_pb2
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import Message

from tests.support.gateway_proc import GatewayProcess
from tests.support.paths import REPO_ROOT

TRANSCODING = REPO_ROOT / "deploy" / "transcoding"
SERVED = {
    "tensorflow.serving.PredictionService": {
        "Classify", "Regress", "Predict", "MultiInference", "GetModelMetadata",
    },
    "tensorflow.serving.ModelService": {"GetModelStatus", "HandleReloadConfigRequest"},
    "inference.GRPCInferenceService": {"ModelInfer", "ServerLive", "ServerReady", "ModelReady"},
    "grpc.health.v1.Health": {"Check", "Watch"},
}  # fmt: skip
"""Services and (at least) these methods; the proxied RPCs are the HTTP rules' selectors."""
PROXIED = {
    "tensorflow.serving.PredictionService.Predict",
    "tensorflow.serving.PredictionService.GetModelMetadata",
    "tensorflow.serving.ModelService.GetModelStatus",
    "inference.GRPCInferenceService.ModelInfer",
    "inference.GRPCInferenceService.ServerLive",
    "inference.GRPCInferenceService.ServerReady",
    "inference.GRPCInferenceService.ModelReady",
    "grpc.health.v1.Health.Check",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``make descriptor-set`` writes, written by the same script."""
    out = tmp_path_factory.mktemp("descriptors")
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "descriptor_set.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def proxy(
    built: Path, gateway: GatewayProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """grpc-gateway built offline from Debian's Go packages by scripts/grpc_gateway.sh (Go's
    build cache in build/go-cache), listening on an OS-chosen port, upstream the gateway's gRPC
    port: its base URL. Fails, not skips, where the toolchain is missing
    (``make system-deps`` installs it)."""
    out = tmp_path_factory.mktemp("grpc-gateway")
    env = {**os.environ, "PYTHON": sys.executable, "GOCACHE": str(REPO_ROOT / "build" / "go-cache")}
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "grpc_gateway.sh"), str(built / "tensorgate.pb"), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    command = [str(out / "tensorgate-grpc-gateway"), "-listen", "127.0.0.1:0"]
    process = subprocess.Popen(
        [*command, "-upstream", gateway.target], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on "), line
        yield f"http://{line.split()[-1]}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()  # type: ignore[union-attr]


def pool_of(path: Path) -> tuple[descriptor_pb2.FileDescriptorSet, descriptor_pool.DescriptorPool]:
    descriptors = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in descriptors.file:  # each after its imports, or Add fails
        pool.Add(file)
    return descriptors, pool


def rules() -> dict[str, dict[str, Any]]:
    config = yaml.safe_load((TRANSCODING / "http_rules.yaml").read_text())
    return {rule["selector"]: rule for rule in config["http"]["rules"]}


@pytest.mark.parametrize("name", ["tensorgate.pb", "tensorgate-http.pb"])
def test_the_descriptor_set_loads_every_service(built: Path, name: str) -> None:
    _, pool = pool_of(built / name)
    for service_name, methods in SERVED.items():
        service = pool.FindServiceByName(service_name)
        assert methods <= {m.name for m in service.methods}, service_name
        for method in service.methods:  # every type resolved, imports included
            assert method.input_type.fields is not None and method.output_type.full_name


def test_the_http_rules_name_methods_and_fields_and_reach_the_annotated_set(built: Path) -> None:
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    try:
        import descriptor_set
    finally:
        sys.path.remove(str(REPO_ROOT / "scripts"))
    descriptor_set.load_rules()  # strictly a google.api.Service
    assert set(rules()) == PROXIED
    descriptors, pool = pool_of(built / "tensorgate-http.pb")
    options = {}
    for file in descriptors.file:
        for service in file.service:
            for method in service.method:
                if method.options.HasExtension(annotations_pb2.http):
                    http = method.options.Extensions[annotations_pb2.http]
                    options[f"{file.package}.{service.name}.{method.name}"] = http
    assert set(options) == PROXIED
    for selector, rule in rules().items():
        verb = "post" if "post" in rule else "get"
        assert getattr(options[selector], verb) == rule[verb]
        assert options[selector].body == rule.get("body", "")
        assert (verb == "post") == (rule.get("body") == "*"), selector
        service_name, method_name = selector.rsplit(".", 1)
        request = pool.FindServiceByName(service_name).FindMethodByName(method_name).input_type
        for variable in re.findall(r"\{([\w.]+)\}", rule[verb]):
            field = _field(request, variable)
            assert field.type == field.TYPE_STRING and not field.is_repeated, selector


def test_envoy_reads_the_annotated_set_for_the_same_services() -> None:
    envoy = yaml.safe_load((TRANSCODING / "envoy.yaml").read_text())
    listener = envoy["static_resources"]["listeners"][0]
    manager = listener["filter_chains"][0]["filters"][0]["typed_config"]
    transcoder = manager["http_filters"][0]["typed_config"]
    assert Path(transcoder["proto_descriptor"]).name == "tensorgate-http.pb"
    assert set(transcoder["services"]) == {s.rsplit(".", 1)[0] for s in PROXIED}
    (cluster,) = envoy["static_resources"]["clusters"]
    (endpoint,) = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"]
    address = endpoint["endpoint"]["address"]["socket_address"]
    service = yaml.safe_load((REPO_ROOT / "deploy/k8s/base/service.yaml").read_text())
    grpc_port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "grpc")
    assert (address["address"], address["port_value"]) == (service["metadata"]["name"], grpc_port)


def test_each_example_request_is_answered_by_a_real_gateway(
    built: Path, gateway: GatewayProcess
) -> None:
    _, pool = pool_of(built / "tensorgate.pb")
    examples = json.loads((TRANSCODING / "examples.json").read_text())
    assert {e["selector"] for e in examples} == PROXIED
    answers = {}
    with grpc.insecure_channel(gateway.target) as channel:
        for example in examples:
            service, method = example["selector"].rsplit(".", 1)
            rpc = pool.FindServiceByName(service).FindMethodByName(method)
            request = _transcode(rules()[example["selector"]], example, rpc.input_type)
            response_class = message_factory.GetMessageClass(rpc.output_type)
            call = channel.unary_unary(
                f"/{service}/{method}",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=response_class.FromString,
            )
            answer = call(request, timeout=30)  # an Any (metadata) resolves in the set
            answers[method] = json_format.MessageToDict(answer, descriptor_pool=pool)
    _check(answers)


def test_each_example_is_answered_through_a_real_grpc_gateway(
    proxy: str, gateway: GatewayProcess
) -> None:
    """Each request of examples.json, sent as HTTP JSON to grpc-gateway built from the rules
    (scripts/grpc_gateway.sh), reaches the gateway's gRPC port and comes back as JSON."""
    examples = json.loads((TRANSCODING / "examples.json").read_text())
    answers = {}
    for example in examples:
        verb, target = example["request"].split(" ", 1)
        body = None if example["body"] is None else json.dumps(example["body"]).encode()
        request = urllib.request.Request(
            proxy + target, data=body, method=verb, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200, example["request"]
            answers[example["selector"].rsplit(".", 1)[1]] = json.load(response)
    _check(answers)
    assert len(answers["Predict"]["outputs"]["probs"]["floatVal"]) == 10
    assert answers["Predict"]["modelSpec"]["name"] == "mlp"  # the path variable reached the call


def _check(answers: dict[str, Any]) -> None:
    """The answers of examples.json's requests, by method, in protobuf's JSON mapping."""
    assert answers["Predict"]["outputs"]["probs"]["tensorShape"] == {
        "dim": [{"size": "1"}, {"size": "10"}]
    }
    assert answers["GetModelMetadata"]["metadata"]["signature_def"]
    assert answers["GetModelStatus"]["model_version_status"][0]["state"] == "AVAILABLE"  # json_name
    assert answers["ModelInfer"]["outputs"][0]["shape"] == ["1", "10"]
    assert answers["ServerLive"] == {"live": True} and answers["ServerReady"] == {"ready": True}
    assert answers["ModelReady"] == {"ready": True} and answers["Check"] == {"status": "SERVING"}


def _transcode(rule: dict[str, Any], example: dict[str, Any], request_type: Any) -> Message:
    """The gRPC request a transcoder makes of ``example`` by ``rule``: the body (protobuf's JSON
    mapping) when the rule takes one, then the path's variables and the query's parameters."""
    verb, target = example["request"].split(" ", 1)
    url = urllib.parse.urlsplit(target)
    template = rule[verb.lower()]
    pieces = re.split(r"\{([\w.]+)\}", template)  # literal, variable, literal, ...
    names = pieces[1::2]
    pattern = "".join(re.escape(p) if i % 2 == 0 else "([^/:]+)" for i, p in enumerate(pieces))
    found = re.fullmatch(pattern, url.path)
    assert found, (template, url.path)
    request = message_factory.GetMessageClass(request_type)()
    if example["body"] is not None:
        json_format.ParseDict(example["body"], request)
    values = dict(zip(names, found.groups(), strict=True))
    values.update(urllib.parse.parse_qsl(url.query))
    for path, value in values.items():
        *parents, leaf = path.split(".")
        owner = request
        for part in parents:
            owner = getattr(owner, part)
        field = owner.DESCRIPTOR.fields_by_name[leaf]
        setattr(owner, leaf, int(value) if field.cpp_type != field.CPPTYPE_STRING else value)
    return request


def _field(message: Any, path: str) -> Any:
    *parents, leaf = path.split(".")
    for part in parents:
        message = message.fields_by_name[part].message_type
    return message.fields_by_name[leaf]
