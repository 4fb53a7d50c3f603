"""Serving API messages ⇄ core types: ModelSpec, Predict, SignatureDef (metadata),
ModelVersionStatus and the reload request.

Tensors themselves go through the tensor codec (:mod:`gateway.tfserving.codec`); Classification,
Regression and MultiInference envelopes through :mod:`gateway.tfserving.codec.inference_messages`;
this module owns the other message envelopes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any, Final, Literal, Protocol

import numpy as np

from channel.dtypes import DTYPE_NAMES
from gateway._pb.tensorflow.core.framework import tensor_shape_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway._pb.tensorflow.core.protobuf import meta_graph_pb2
from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    model_management_pb2,
    model_pb2,
    predict_pb2,
)
from gateway._pb.xla.tsl.protobuf import error_codes_pb2
from gateway.config.management_paths import ManagementPaths
from gateway.config.model_config import ConfigError, ModelSpecConfig, model_specs
from gateway.decoding import Declared, check_total
from gateway.errors import InvalidArgument
from gateway.serving.core import ModelRef
from gateway.serving.inputs import Arrays, Expected, Header
from gateway.serving.registry import VersionStatus
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.codec import tensor_decode, tensor_types
from gateway.tfserving.codec.tensor_types import TensorType, by_name

SIGNATURE_DEF_FIELD = "signature_def"


class HasModelSpec(Protocol):
    """A request (or MultiInference task) carrying a ``model_spec`` field."""

    @property
    def model_spec(self) -> model_pb2.ModelSpec: ...

    def HasField(self, field_name: Literal["model_spec"]) -> bool: ...


def model_ref(message: HasModelSpec) -> ModelRef:
    """The ModelRef of a request's ``model_spec`` (``version`` and ``version_label`` are a oneof
    upstream). A request without a ``model_spec`` is INVALID_ARGUMENT "Missing ModelSpec", as TF
    Serving; an empty name is left to the lookup (NOT_FOUND) or, for MultiInference tasks, to the
    inference service's own check."""
    if not message.HasField("model_spec"):
        raise InvalidArgument("Missing ModelSpec")
    spec = message.model_spec
    choice = spec.WhichOneof("version_choice")
    if choice == "version":
        return ModelRef(spec.name, version=spec.version.value)
    if choice == "version_label":
        return ModelRef(spec.name, label=spec.version_label)
    return ModelRef(spec.name)


def model_name(request: object) -> str:
    """The model a request names, for metrics and traces: its ``model_spec.name`` (a
    MultiInference's first task's, as TF Serving's ``multi_inference.cc``); "" when none."""
    if isinstance(request, inference_pb2.MultiInferenceRequest):
        return request.tasks[0].model_spec.name if request.tasks else ""
    spec = getattr(request, "model_spec", None)
    return spec.name if isinstance(spec, model_pb2.ModelSpec) else ""


class PredictInputs:
    """A PredictRequest's input tensors (:class:`gateway.serving.inputs.Decoded`): each tensor's
    declared dtype and shape, its element count bounded (INVALID_ARGUMENT naming the input), then
    the bytes all of them would take once decoded, which must not exceed ``max_bytes``
    (RESOURCE_EXHAUSTED; None: no bound) — typed values repeat to fill a shape, so a few bytes on
    the wire may declare gigabytes. Nothing is expanded before the core has validated every
    header."""

    __slots__ = ("_headers", "_inputs", "_max_bytes", "_max_elements")

    def __init__(
        self,
        request: predict_pb2.PredictRequest,
        signature: object = None,
        *,
        max_elements: int,
        max_bytes: int | None,
    ) -> None:
        """``signature``: unused (a TensorProto says its own dtype), so that the class itself,
        its request and bounds given, is the core's ``InputsDecoder``."""
        self._inputs = request.inputs
        self._max_elements = max_elements
        self._max_bytes = max_bytes
        self._headers: list[tuple[TensorProto, Declared[TensorType]]] = []

    @property
    def names(self) -> Collection[str]:
        return self._inputs  # the map's own keys (its views are Python-level, per call)

    def headers(self) -> Iterator[Header]:
        total = 0
        kept = self._headers
        inputs = self._inputs
        for name in inputs:
            proto = inputs[name]
            try:
                header = tensor_decode.declared(proto, max_elements=self._max_elements, name=name)
            except InvalidArgument as exc:
                raise InvalidArgument(f"input '{name}': {exc.message}") from None
            kept.append((proto, header))
            yield name, header.wire_type.name, header.shape
            total += header.nbytes
        check_total(total, self._max_bytes)

    def fast_arrays(self, expected: Expected) -> tuple[dict[str, np.ndarray], int] | None:
        return fast_arrays(
            self._inputs, expected, max_elements=self._max_elements, max_bytes=self._max_bytes
        )

    def arrays(self) -> dict[str, np.ndarray]:
        inputs: dict[str, np.ndarray] = {}
        for proto, header in self._headers:
            try:
                inputs[header.name] = tensor_decode.values(proto, header)
            except InvalidArgument as exc:
                raise InvalidArgument(f"input '{header.name}': {exc.message}") from None
        return inputs


def fill_model_spec(
    spec: model_pb2.ModelSpec, name: str, version: int, signature_name: str = ""
) -> None:
    spec.name = name
    spec.version.value = version
    if signature_name:
        spec.signature_name = signature_name


def metadata_response(
    model: str, version: int, signatures: Mapping[str, Signature]
) -> get_model_metadata_pb2.GetModelMetadataResponse:
    """GetModelMetadataResponse with ``metadata["signature_def"]`` = packed SignatureDefMap."""
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    fill_model_spec(response.model_spec, model, version)
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    for name, signature in signatures.items():
        signature_map.signature_def[name].CopyFrom(signature_def(signature))
    response.metadata[SIGNATURE_DEF_FIELD].Pack(signature_map)
    return response


def check_metadata_fields(request: get_model_metadata_pb2.GetModelMetadataRequest) -> None:
    """TF Serving accepts exactly the ``signature_def`` metadata field."""
    if not request.metadata_field:
        raise InvalidArgument("GetModelMetadataRequest must specify at least one metadata_field")
    for field_name in request.metadata_field:
        if field_name != SIGNATURE_DEF_FIELD:
            raise InvalidArgument(f"Metadata field {field_name} is not supported")


def signature_def(signature: Signature) -> meta_graph_pb2.SignatureDef:
    """The SignatureDef as the model declares it: its ``definition`` when the worker sent one,
    else built from the signature's tensors (graph tensor names, dtypes, shapes)."""
    if signature.definition:
        return meta_graph_pb2.SignatureDef.FromString(signature.definition)
    result = meta_graph_pb2.SignatureDef(method_name=signature.method_name)
    for spec in signature.inputs:
        result.inputs[spec.name].CopyFrom(tensor_info(spec))
    for spec in signature.outputs:
        result.outputs[spec.name].CopyFrom(tensor_info(spec))
    return result


def tensor_info(spec: TensorSpec) -> meta_graph_pb2.TensorInfo:
    info = meta_graph_pb2.TensorInfo(
        name=spec.tensor_name or spec.name, dtype=tensor_types.data_type(spec.dtype)
    )
    info.tensor_shape.CopyFrom(tensor_shape(spec.shape))
    return info


def tensor_shape(shape: tuple[int, ...] | None) -> tensor_shape_pb2.TensorShapeProto:
    proto = tensor_shape_pb2.TensorShapeProto()
    if shape is None:
        proto.unknown_rank = True
    else:
        for size in shape:
            proto.dim.add(size=size)
    return proto


def status_response(
    model: str, statuses: list[VersionStatus]
) -> get_model_status_pb2.GetModelStatusResponse:
    response = get_model_status_pb2.GetModelStatusResponse()
    for status in statuses:
        entry = response.model_version_status.add(version=status.version)
        entry.status.SetInParent()  # TF Serving always sets it (error_code OK when healthy)
        entry.state = get_model_status_pb2.ModelVersionStatus.State.Value(status.state.name)
        if status.error is not None:
            entry.status.error_code = error_codes_pb2.Code.Value(status.error.code.name)
            entry.status.error_message = status.error.message
    return response


def reload_specs(
    request: model_management_pb2.ReloadConfigRequest, paths: ManagementPaths | None = None
) -> list[ModelSpecConfig]:
    """The models a ReloadConfigRequest asks for; INVALID_ARGUMENT (TF Serving's text) for a
    config that is not a ``model_config_list`` (an empty one included) or breaks its rules, a
    base path or log prefix ``paths`` does not allow included."""
    if request.config.WhichOneof("config") != "model_config_list":
        raise InvalidArgument(
            "ServerModelConfig type not supported by HandleReloadConfigRequest. "
            "Only ModelConfigList is currently supported"
        )
    try:
        return model_specs(request.config, paths)
    except ConfigError as exc:
        raise InvalidArgument(str(exc)) from None


def reload_response(
    request: model_management_pb2.ReloadConfigRequest,
) -> model_management_pb2.ReloadConfigResponse:
    """Success: status OK, and each requested metric with an increase of 0 (TF Serving's value
    for a metric it does not have; tensorgate has none of TensorFlow's monitoring metrics)."""
    response = model_management_pb2.ReloadConfigResponse()
    response.status.error_code = error_codes_pb2.OK
    for name in request.metric_names:
        response.metric.add(name=name, int64_value_increase=0)
    return response


_FAST_TYPED: Final = {
    "float32": "float_val",
    "float64": "double_val",
    "int32": "int_val",
    "int64": "int64_val",
}
"""Typed fields read on the fast path: those whose values need no narrowing or pairing."""
_BY_FAST_NAME: Final = {n: by_name(n) for n in sorted(DTYPE_NAMES - {"bool", "string"})}
"""Dtypes whose ``tensor_content`` is read as it is on the fast path (bools are normalised and
strings framed by the general one)."""


def fast_arrays(
    inputs: Any, expected: Expected, *, max_elements: int, max_bytes: int | None
) -> tuple[Arrays, int] | None:
    """A PredictRequest's ``inputs`` map as arrays when it is exactly ``expected`` — each input
    of its dtype and dims past the first, as many rows each, its values whole in
    ``tensor_content`` or in its plain typed field — within ``max_elements`` per tensor and
    ``max_bytes`` in all; None for anything else (the general decode then says what)."""
    specs = expected.inputs
    if len(inputs) != len(specs):
        return None
    arrays: Arrays = {}
    rows = -1
    total = 0
    for spec in specs:
        name = spec.name
        if name not in inputs:  # a message map's [] would add the key
            return None
        proto = inputs[name]
        wire = _BY_FAST_NAME.get(spec.dtype_name)
        if wire is None or proto.dtype != wire.data_type:
            return None
        dims = []
        for dim in proto.tensor_shape.dim:
            dims.append(dim.size)
        if not dims or tuple(dims[1:]) != spec.tail or (rows >= 0 and dims[0] != rows):
            return None
        rows = dims[0]
        count = rows * spec.tail_elements
        nbytes = count * spec.dtype.itemsize
        total += nbytes
        if count > max_elements or rows > max_elements:
            return None
        content = proto.tensor_content
        if content:
            if len(content) != nbytes:
                return None
            flat = np.frombuffer(content, dtype=spec.dtype)
        else:
            field = _FAST_TYPED.get(spec.dtype_name)
            if field is None:
                return None
            values = getattr(proto, field)
            if len(values) != count:
                return None
            flat = np.array(values, dtype=spec.dtype)
        arrays[name] = flat.reshape(dims)
    if max_bytes is not None and total > max_bytes:
        return None
    return arrays, rows
