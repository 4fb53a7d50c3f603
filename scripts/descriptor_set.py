"""Descriptor sets of tensorgate's gRPC services, for transcoding proxies (``make descriptor-set``).

Usage: ``python scripts/descriptor_set.py [--out DIR]`` (default ``build/``) writes:

- ``tensorgate.pb``: a ``FileDescriptorSet`` of TF Serving's ``PredictionService`` and
  ``ModelService``, the Open Inference Protocol's ``GRPCInferenceService`` and
  ``grpc.health.v1.Health``, every import included (``protoc --include_imports``);
- ``tensorgate-http.pb``: the same with the HTTP rules of ``deploy/transcoding/http_rules.yaml``
  (a gRPC API service configuration) copied into the methods' ``google.api.http`` options, the
  file ``google/api/annotations.proto`` (and its imports) added and imported where used — what
  Envoy's gRPC-JSON transcoder reads (it takes no service configuration). The protos in
  ``protos/`` are unchanged.

The protos come from ``protos/``, ``google/protobuf`` from grpcio-tools, ``grpc_health/v1`` from
grpcio-health-checking and ``google/api`` from googleapis-common-protos (all pinned).
"""

from __future__ import annotations

import argparse
import importlib.resources
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from google.api import annotations_pb2, http_pb2, service_pb2
from google.protobuf import descriptor_pb2, json_format
from grpc_health.v1 import health_pb2

REPO_ROOT = Path(__file__).resolve().parent.parent
RULES = REPO_ROOT / "deploy" / "transcoding" / "http_rules.yaml"
SERVICE_PROTOS = (
    "tensorflow_serving/apis/prediction_service.proto",
    "tensorflow_serving/apis/model_service.proto",
    "inference/grpc_service.proto",
)
ANNOTATIONS = "google/api/annotations.proto"


def _package_file(package: str, name: str) -> Path:
    return Path(str(importlib.resources.files(package).joinpath(name)))


def plain_set(proto_root: Path = REPO_ROOT / "protos") -> descriptor_pb2.FileDescriptorSet:
    """The services' descriptors with every import (protoc ``--include_imports``), then
    ``grpc.health.v1``'s (grpcio-health-checking ships it compiled, without its .proto)."""
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "set.pb"
        args = [
            "protoc",
            f"-I{_package_file('grpc_tools', '_proto')}",
            f"-I{proto_root}",
            "--include_imports",
            f"--descriptor_set_out={out}",
            *SERVICE_PROTOS,
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed: {' '.join(args)}")
        descriptors = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    health = descriptor_pb2.FileDescriptorProto.FromString(health_pb2.DESCRIPTOR.serialized_pb)
    assert not health.dependency
    descriptors.file.append(health)
    return descriptors


def load_rules(path: Path = RULES) -> service_pb2.Service:
    """The service configuration (``type: google.api.Service`` YAML), strictly parsed."""
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    if config.pop("type", None) != "google.api.Service":
        raise ValueError(f"{path}: not a google.api.Service configuration")
    return json_format.ParseDict(config, service_pb2.Service())


def annotated_set(
    plain: descriptor_pb2.FileDescriptorSet, service: service_pb2.Service
) -> descriptor_pb2.FileDescriptorSet:
    """``plain`` with each rule set as its method's ``google.api.http`` option. ValueError for
    a rule whose selector names no method."""
    annotated = descriptor_pb2.FileDescriptorSet()
    annotated.CopyFrom(plain)
    methods = {}
    for file in annotated.file:
        for svc in file.service:
            for method in svc.method:
                methods[f"{file.package}.{svc.name}.{method.name}"] = (file, method)
    for rule in service.http.rules:
        if rule.selector not in methods:
            raise ValueError(f"HTTP rule for {rule.selector}: no such method")
        file, method = methods[rule.selector]
        option = http_pb2.HttpRule()
        option.CopyFrom(rule)
        option.ClearField("selector")
        method.options.Extensions[annotations_pb2.http].CopyFrom(option)
        if ANNOTATIONS not in file.dependency:
            file.dependency.append(ANNOTATIONS)
    have = {file.name for file in annotated.file}
    # annotations.proto imports http.proto and descriptor.proto: they come first
    google_api = [descriptor_pb2.DESCRIPTOR, http_pb2.DESCRIPTOR, annotations_pb2.DESCRIPTOR]
    added = [descriptor_pb2.FileDescriptorProto.FromString(d.serialized_pb) for d in google_api]
    first_user = min(i for i, f in enumerate(annotated.file) if ANNOTATIONS in f.dependency)
    for proto in reversed([p for p in added if p.name not in have]):
        annotated.file.insert(first_user, proto)  # a file comes before the files importing it
    return annotated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    plain = plain_set()
    for name, descriptors in (
        ("tensorgate.pb", plain),
        ("tensorgate-http.pb", annotated_set(plain, load_rules())),
    ):
        (args.out / name).write_bytes(descriptors.SerializeToString(deterministic=True))
        sys.stdout.write(f"wrote {args.out / name} ({len(descriptors.file)} files)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
