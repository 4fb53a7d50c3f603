"""The client's translations: plain Python ⇄ TF Serving's request and response messages.

Requests: numeric and bool inputs travel as ``tensor_content`` (the fast path), strings as typed
``string_val``; an unsupported dtype raises :class:`gateway.errors.InvalidArgument` before anything
is sent. Responses: outputs as numpy arrays (decoding bounded by ``max_elements``), metadata and
status as plain dicts (:func:`metadata_dict`, :func:`status_list`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from channel.messages import DEFAULT_SIGNATURE as DEFAULT_SIGNATURE  # part of the client API
from gateway._pb.tensorflow.core.framework import tensor_shape_pb2, types_pb2
from gateway._pb.tensorflow.core.protobuf import meta_graph_pb2
from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_pb2,
    predict_pb2,
)
from gateway.errors import Code, InvalidArgument
from gateway.tfserving.codec import tensor_decode, tensor_encode, tensor_types

SIGNATURE_DEF_FIELD = "signature_def"


def model_spec(
    model: str,
    *,
    version: int | None = None,
    version_label: str | None = None,
    signature_name: str = "",
) -> model_pb2.ModelSpec:
    """A ModelSpec; ``version`` and ``version_label`` are exclusive (a oneof on the wire)."""
    if version is not None and version_label is not None:
        raise ValueError("give version or version_label, not both")
    spec = model_pb2.ModelSpec(name=model, signature_name=signature_name)
    if version is not None:
        spec.version.value = version
    elif version_label is not None:
        spec.version_label = version_label
    return spec


def predict_request(
    model: str,
    inputs: Mapping[str, npt.ArrayLike],
    *,
    version: int | None = None,
    version_label: str | None = None,
    signature_name: str = DEFAULT_SIGNATURE,
    output_filter: Sequence[str] = (),
) -> predict_pb2.PredictRequest:
    """Build a PredictRequest: numeric inputs as ``tensor_content``, strings as typed values."""
    request = predict_pb2.PredictRequest(output_filter=list(output_filter))
    request.model_spec.CopyFrom(
        model_spec(
            model, version=version, version_label=version_label, signature_name=signature_name
        )
    )
    for name, value in inputs.items():
        # The codec always writes strings as typed string_val, whatever as_tensor_content says.
        tensor = tensor_encode.from_ndarray(np.asarray(value), as_tensor_content=True)
        request.inputs[name].CopyFrom(tensor)
    return request


def predict_outputs(
    response: predict_pb2.PredictResponse, *, max_elements: int
) -> dict[str, npt.NDArray[Any]]:
    """Decode every output tensor of a PredictResponse, keyed by output name."""
    return {
        name: tensor_decode.to_ndarray(proto, max_elements=max_elements)
        for name, proto in response.outputs.items()
    }


def metadata_request(
    model: str, *, version: int | None = None
) -> get_model_metadata_pb2.GetModelMetadataRequest:
    """A GetModelMetadataRequest asking for ``signature_def`` (the only field TF Serving knows)."""
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=[SIGNATURE_DEF_FIELD])
    request.model_spec.CopyFrom(model_spec(model, version=version))
    return request


def status_request(
    model: str, *, version: int | None = None
) -> get_model_status_pb2.GetModelStatusRequest:
    """A GetModelStatusRequest for all versions of ``model``, or only ``version``."""
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.CopyFrom(model_spec(model, version=version))
    return request


def model_spec_dict(spec: model_pb2.ModelSpec) -> dict[str, Any]:
    """``{"name", "version": int | None, "version_label": str | None, "signature_name"}``."""
    choice = spec.WhichOneof("version_choice")
    return {
        "name": spec.name,
        "version": spec.version.value if choice == "version" else None,
        "version_label": spec.version_label if choice == "version_label" else None,
        "signature_name": spec.signature_name,
    }


def _shape_list(shape: tensor_shape_pb2.TensorShapeProto) -> list[int] | None:
    """Dimension sizes (``-1`` = dynamic); ``None`` for an unknown rank."""
    if shape.unknown_rank:
        return None
    return [int(dim.size) for dim in shape.dim]


def _dtype_name(data_type: int) -> str:
    """Canonical dtype name; the DataType enum's own name (``"DT_VARIANT"``) if not a tensor's."""
    try:
        return tensor_types.canonical_name(data_type)
    except InvalidArgument:
        try:
            return types_pb2.DataType.Name(types_pb2.DataType.ValueType(data_type))
        except ValueError:
            return str(data_type)


def _tensor_infos(infos: Mapping[str, meta_graph_pb2.TensorInfo]) -> dict[str, dict[str, Any]]:
    return {
        name: {"dtype": _dtype_name(info.dtype), "shape": _shape_list(info.tensor_shape)}
        for name, info in sorted(infos.items())
    }


def metadata_dict(response: get_model_metadata_pb2.GetModelMetadataResponse) -> dict[str, Any]:
    """GetModelMetadataResponse → plain dict; signatures and tensors sorted by name::

        {"model_spec": {"name": "digits", "version": 1, "version_label": None,
                        "signature_name": ""},
         "signature_def": {"serving_default": {
             "inputs": {"images": {"dtype": "float32", "shape": [-1, 64]}},
             "outputs": {"label": {"dtype": "int64", "shape": [-1]},
                         "probabilities": {"dtype": "float32", "shape": [-1, 10]}},
             "method_name": "tensorflow/serving/predict"}}}

    ``shape`` is ``None`` for an unknown rank. Raises ``ValueError`` when the ``signature_def``
    entry is not a ``tensorflow.serving.SignatureDefMap``; a response without it gives ``{}``.
    """
    signatures: dict[str, Any] = {}
    if SIGNATURE_DEF_FIELD in response.metadata:
        packed = response.metadata[SIGNATURE_DEF_FIELD]
        signature_map = get_model_metadata_pb2.SignatureDefMap()
        if not packed.Unpack(signature_map):
            raise ValueError(f"metadata['{SIGNATURE_DEF_FIELD}'] holds {packed.type_url!r}")
        for name, signature in sorted(signature_map.signature_def.items()):
            signatures[name] = {
                "inputs": _tensor_infos(signature.inputs),
                "outputs": _tensor_infos(signature.outputs),
                "method_name": signature.method_name,
            }
    return {"model_spec": model_spec_dict(response.model_spec), SIGNATURE_DEF_FIELD: signatures}


def _code_name(value: int) -> str:
    try:
        return Code(value).name
    except ValueError:
        return str(value)


def status_list(response: get_model_status_pb2.GetModelStatusResponse) -> list[dict[str, Any]]:
    """GetModelStatusResponse → one dict per version, in the response's order::

        [{"version": 1, "state": "AVAILABLE",
          "status": {"error_code": "OK", "error_message": ""}}]

    ``state`` is ModelVersionStatus.State's name (UNKNOWN, START, LOADING, AVAILABLE, UNLOADING,
    END); ``error_code`` the canonical code name (a number if unknown).
    """
    state_names = get_model_status_pb2.ModelVersionStatus.State
    result: list[dict[str, Any]] = []
    for entry in response.model_version_status:
        try:
            state = state_names.Name(entry.state)
        except ValueError:
            state = str(entry.state)
        result.append(
            {
                "version": int(entry.version),
                "state": state,
                "status": {
                    "error_code": _code_name(entry.status.error_code),
                    "error_message": entry.status.error_message,
                },
            }
        )
    return result
