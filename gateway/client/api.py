"""A small Python client for TF Serving's gRPC API (tensorgate or TF Serving), sync and async.

Needs only grpcio, numpy and tensorgate's generated stubs, no TensorFlow::

    with Client("localhost:8500") as client:
        outputs = client.predict("digits", {"images": np.zeros((1, 64), np.float32)})
        outputs["label"]  # np.ndarray, int64, shape (1,)

    async with AsyncClient("localhost:8500") as client:
        signature = (await client.metadata("digits"))["signature_def"]["serving_default"]

Contract:

- Inputs go through ``np.asarray`` unchanged (no casting: send the signature's dtype). Numeric and
  bool arrays travel as ``tensor_content`` (the fast path); strings (``bytes``/``str``, UTF-8) as
  typed ``string_val``. An unsupported dtype raises :class:`gateway.errors.InvalidArgument`
  before anything is sent.
- Outputs come back as numpy arrays; a response tensor may declare at most ``max_message_bytes``
  elements (the bound on decoding, see :func:`gateway.tfserving.codec.tensor.to_ndarray`).
- ``timeout`` is in seconds and becomes the RPC deadline; ``None`` means no deadline, and a
  per-call ``...`` (the default) means the client's own ``timeout``.
- Server errors propagate as ``grpc.RpcError`` (sync; ``.code()``, ``.details()``) or
  ``grpc.aio.AioRpcError`` (async), carrying TF Serving's status and message. Misuse on the
  client side (both ``version`` and ``version_label``) raises ``ValueError``.

The translation of metadata and status responses to plain dicts lives here (see
:func:`metadata_dict`, :func:`status_list`); tensors go through
:mod:`gateway.tfserving.codec.tensor`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import EllipsisType, TracebackType
from typing import Any

import grpc
import numpy as np
import numpy.typing as npt

from gateway._pb.tensorflow.core.framework import tensor_shape_pb2, types_pb2
from gateway._pb.tensorflow.core.protobuf import meta_graph_pb2
from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)
from gateway.errors import Code, InvalidArgument
from gateway.tfserving.codec import tensor as tensor_codec

DEFAULT_TARGET = "localhost:8500"
DEFAULT_SIGNATURE = "serving_default"
SIGNATURE_DEF_FIELD = "signature_def"

Timeout = float | None | EllipsisType


def _channel_options(max_message_bytes: int) -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]


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
        tensor = tensor_codec.from_ndarray(np.asarray(value), as_tensor_content=True)
        request.inputs[name].CopyFrom(tensor)
    return request


def predict_outputs(
    response: predict_pb2.PredictResponse, *, max_elements: int
) -> dict[str, npt.NDArray[Any]]:
    """Decode every output tensor of a PredictResponse, keyed by output name."""
    return {
        name: tensor_codec.to_ndarray(proto, max_elements=max_elements)
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
        return tensor_codec.dtype_name(data_type)
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


class Client:
    """Blocking client over one gRPC channel; thread-safe as grpc channels are.

    ``target`` is ``host:port``; ``timeout`` (seconds, ``None`` = none) is the default deadline
    of each call; ``max_message_bytes`` bounds sent and received messages; ``credentials`` makes
    a TLS channel (``grpc.ssl_channel_credentials(...)``), otherwise plaintext.
    Use as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 2**20,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        options = _channel_options(max_message_bytes)
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=options)
        self._timeout = timeout
        self._max_elements = max_message_bytes
        self._predict = prediction_service_pb2_grpc.PredictionServiceStub(self._channel)
        self._models = model_service_pb2_grpc.ModelServiceStub(self._channel)

    def _deadline(self, timeout: Timeout) -> float | None:
        return self._timeout if timeout is ... else timeout

    def predict(
        self,
        model: str,
        inputs: Mapping[str, npt.ArrayLike],
        *,
        version: int | None = None,
        version_label: str | None = None,
        signature_name: str = DEFAULT_SIGNATURE,
        output_filter: Sequence[str] = (),
        timeout: Timeout = ...,
    ) -> dict[str, npt.NDArray[Any]]:
        """Run ``model`` on ``inputs`` (name → array); returns every (or each filtered) output."""
        request = predict_request(
            model,
            inputs,
            version=version,
            version_label=version_label,
            signature_name=signature_name,
            output_filter=output_filter,
        )
        response: predict_pb2.PredictResponse = self._predict.Predict(
            request, timeout=self._deadline(timeout)
        )
        return predict_outputs(response, max_elements=self._max_elements)

    def metadata(
        self, model: str, *, version: int | None = None, timeout: Timeout = ...
    ) -> dict[str, Any]:
        """The model's signatures, as :func:`metadata_dict` describes."""
        response: get_model_metadata_pb2.GetModelMetadataResponse = self._predict.GetModelMetadata(
            metadata_request(model, version=version), timeout=self._deadline(timeout)
        )
        return metadata_dict(response)

    def status(
        self, model: str, *, version: int | None = None, timeout: Timeout = ...
    ) -> list[dict[str, Any]]:
        """The state of each version of ``model`` (or of ``version``), as :func:`status_list`."""
        response: get_model_status_pb2.GetModelStatusResponse = self._models.GetModelStatus(
            status_request(model, version=version), timeout=self._deadline(timeout)
        )
        return status_list(response)

    def close(self) -> None:
        """Close the channel; in-flight calls are cancelled."""
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient:
    """The :class:`Client` API as coroutines, on ``grpc.aio``.

    The channel is created on first use, inside the running event loop, and belongs to that loop:
    use one client from one loop. Use as an async context manager or await :meth:`close`.
    """

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 2**20,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        self._target = target
        self._credentials = credentials
        self._options = _channel_options(max_message_bytes)
        self._timeout = timeout
        self._max_elements = max_message_bytes
        self._channel: grpc.aio.Channel | None = None
        self._closed = False
        self._predict: Any = None
        self._models: Any = None

    def _open(self) -> None:
        if self._closed:
            raise RuntimeError("AsyncClient is closed")
        if self._channel is not None:
            return
        if self._credentials is None:
            channel = grpc.aio.insecure_channel(self._target, options=self._options)
        else:
            channel = grpc.aio.secure_channel(
                self._target, self._credentials, options=self._options
            )
        self._channel = channel
        self._predict = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        self._models = model_service_pb2_grpc.ModelServiceStub(channel)

    def _deadline(self, timeout: Timeout) -> float | None:
        return self._timeout if timeout is ... else timeout

    async def predict(
        self,
        model: str,
        inputs: Mapping[str, npt.ArrayLike],
        *,
        version: int | None = None,
        version_label: str | None = None,
        signature_name: str = DEFAULT_SIGNATURE,
        output_filter: Sequence[str] = (),
        timeout: Timeout = ...,  # noqa: ASYNC109 - the gRPC deadline, sent to the server
    ) -> dict[str, npt.NDArray[Any]]:
        """Run ``model`` on ``inputs`` (name → array); returns every (or each filtered) output."""
        request = predict_request(
            model,
            inputs,
            version=version,
            version_label=version_label,
            signature_name=signature_name,
            output_filter=output_filter,
        )
        self._open()
        response: predict_pb2.PredictResponse = await self._predict.Predict(
            request, timeout=self._deadline(timeout)
        )
        return predict_outputs(response, max_elements=self._max_elements)

    async def metadata(
        self,
        model: str,
        *,
        version: int | None = None,
        timeout: Timeout = ...,  # noqa: ASYNC109 - the gRPC deadline, sent to the server
    ) -> dict[str, Any]:
        """The model's signatures, as :func:`metadata_dict` describes."""
        self._open()
        response: get_model_metadata_pb2.GetModelMetadataResponse = (
            await self._predict.GetModelMetadata(
                metadata_request(model, version=version), timeout=self._deadline(timeout)
            )
        )
        return metadata_dict(response)

    async def status(
        self,
        model: str,
        *,
        version: int | None = None,
        timeout: Timeout = ...,  # noqa: ASYNC109 - the gRPC deadline, sent to the server
    ) -> list[dict[str, Any]]:
        """The state of each version of ``model`` (or of ``version``), as :func:`status_list`."""
        self._open()
        response: get_model_status_pb2.GetModelStatusResponse = await self._models.GetModelStatus(
            status_request(model, version=version), timeout=self._deadline(timeout)
        )
        return status_list(response)

    async def close(self) -> None:
        """Close the channel (if one was opened); in-flight calls are cancelled. Idempotent."""
        self._closed = True
        if self._channel is not None:
            channel, self._channel = self._channel, None
            await channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
