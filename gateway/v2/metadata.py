"""Signatures → V2 model metadata; server metadata; health answers (gRPC messages and REST JSON).

**Which signature a V2 model is.** V2 has no signatures: a model is one set of inputs and outputs.
tensorgate serves the signature named by the ``signature_name`` request parameter, and without
it :func:`default_signature`: ``serving_default`` (TF Serving's default), or else the model's only
signature if it has exactly one. Model metadata describes that default (empty inputs and outputs
when there is none); ``ModelInfer`` without the parameter on such a model is INVALID_ARGUMENT
naming the signatures to choose from.

**Model metadata** (``ModelMetadataResponse``; REST ``GET /v2/models/{m}[/versions/{v}]``)::

    {"name": "mlp", "versions": ["1", "2"], "platform": "onnx_onnxv1",
     "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 64]}],
     "outputs": [{"name": "probs", "datatype": "FP32", "shape": [-1, 10]}]}

``versions`` are the model's available versions; ``platform`` the protocol's name for the
runtime (``onnx`` → ``onnx_onnxv1``, ``tensorflow`` → ``tensorflow_savedmodel``; a model served
by OpenVINO: ``openvino_fp32`` or ``openvino_bf16``, its precision); tensor names
are the signature's aliases, ``-1`` a dynamic dimension; a tensor of unknown rank shows ``[-1]``.

**Server metadata** (``ServerMetadataResponse``; REST ``GET /v2``)::

    {"name": "tensorgate", "version": "0.1.0",
     "extensions": ["binary_tensor_data", "parameters", "statistics", "model_repository"]}

(``model_repository`` always, as Triton lists it in every model control mode: the index is always
open; load and unload answer Triton's refusal without ``--enable_model_management_api``.)

**Health** (REST bodies; the status is 200 for true, 400 for false): ``{"live": true}``,
``{"ready": true}``, ``{"name": "mlp", "ready": true}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway.errors import InvalidArgument
from gateway.serving.registry import Servable
from gateway.serving.signature import DEFAULT_SIGNATURE, Signature, TensorSpec, find_signature
from gateway.v2 import datatypes, version_strings

SERVER_NAME: Final = "tensorgate"
PLATFORMS: Final = {"onnx": "onnx_onnxv1", "tensorflow": "tensorflow_savedmodel"}
EXTENSIONS: Final = ("binary_tensor_data", "parameters", "statistics", "model_repository")


def default_signature(signatures: Mapping[str, Signature]) -> Signature | None:
    """``serving_default``, else the only signature, else None."""
    signature = signatures.get(DEFAULT_SIGNATURE)
    if signature is None and len(signatures) == 1:
        (signature,) = signatures.values()
    return signature


def signature_for(model: str, signatures: Mapping[str, Signature], name: str) -> Signature:
    """The signature a request runs: ``name`` (the ``signature_name`` parameter) or the default.
    FAILED_PRECONDITION for an unknown name (TF Serving's), INVALID_ARGUMENT without a default
    or for one that cannot run."""
    if name:
        return find_signature(signatures, name)
    signature = default_signature(signatures)
    if signature is None:
        raise InvalidArgument(
            f"model '{model}' has no '{DEFAULT_SIGNATURE}' signature: choose one of "
            f"{sorted(signatures)} with the 'signature_name' parameter"
        )
    return find_signature(signatures, signature.name)


def platform(servable: Servable) -> str:
    """The protocol's platform name for the servable's runtime: the runtime with its precision
    when it is not the platform's own (``openvino_fp32``, ``openvino_bf16``)."""
    return servable.runtime or PLATFORMS.get(servable.platform, servable.platform)


def tensor(spec: TensorSpec) -> tuple[str, str, list[int]]:
    """(name, V2 datatype, shape) of one signature tensor."""
    shape = [-1] if spec.shape is None else list(spec.shape)
    return spec.name, datatypes.datatype_of(spec.dtype), shape


def _tensors(servable: Servable) -> tuple[list[tuple[str, str, list[int]]], ...]:
    signature = default_signature(servable.signatures)
    if signature is None:
        return [], []
    return [tensor(t) for t in signature.inputs], [tensor(t) for t in signature.outputs]


def model_metadata(servable: Servable, available: Iterable[int]) -> pb.ModelMetadataResponse:
    """``ModelMetadataResponse`` of ``servable``; ``available``: the model's available versions."""
    inputs, outputs = _tensors(servable)
    response = pb.ModelMetadataResponse(
        name=servable.model,
        versions=version_strings.version_strings(available),
        platform=platform(servable),
    )
    for name, datatype, shape in inputs:
        response.inputs.add(name=name, datatype=datatype, shape=shape)
    for name, datatype, shape in outputs:
        response.outputs.add(name=name, datatype=datatype, shape=shape)
    return response


def model_metadata_json(servable: Servable, available: Iterable[int]) -> dict[str, Any]:
    """The REST model metadata object (same content as :func:`model_metadata`)."""
    inputs, outputs = _tensors(servable)
    return {
        "name": servable.model,
        "versions": version_strings.version_strings(available),
        "platform": platform(servable),
        "inputs": [{"name": n, "datatype": d, "shape": s} for n, d, s in inputs],
        "outputs": [{"name": n, "datatype": d, "shape": s} for n, d, s in outputs],
    }


def server_metadata(version: str) -> pb.ServerMetadataResponse:
    """``ServerMetadataResponse``: tensorgate, its ``version``, the extensions it has."""
    return pb.ServerMetadataResponse(name=SERVER_NAME, version=version, extensions=EXTENSIONS)


def server_metadata_json(version: str) -> dict[str, Any]:
    """The REST server metadata object (same content as :func:`server_metadata`)."""
    return {"name": SERVER_NAME, "version": version, "extensions": list(EXTENSIONS)}


def live_json(live: bool) -> dict[str, Any]:
    return {"live": live}


def ready_json(ready: bool) -> dict[str, Any]:
    return {"ready": ready}


def model_ready_json(name: str, ready: bool) -> dict[str, Any]:
    return {"name": name, "ready": ready}
