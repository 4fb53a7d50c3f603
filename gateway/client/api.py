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
  elements (the bound on decoding, see :func:`gateway.tfserving.codec.tensor_decode.to_ndarray`).
- ``timeout`` is in seconds and becomes the RPC deadline; ``None`` means no deadline, and a
  per-call ``...`` (the default) means the client's own ``timeout``.
- Server errors propagate as ``grpc.RpcError`` (sync; ``.code()``, ``.details()``) or
  ``grpc.aio.AioRpcError`` (async), carrying TF Serving's status and message. Misuse on the
  client side (both ``version`` and ``version_label``) raises ``ValueError``.

Messages are built and read by :mod:`gateway.client.convert`; tensors go through
the tensor codec (:mod:`gateway.tfserving.codec`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import EllipsisType, TracebackType
from typing import Any

import grpc
import numpy.typing as npt

from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)
from gateway.client.convert import (
    DEFAULT_SIGNATURE,
    metadata_dict,
    metadata_request,
    predict_outputs,
    predict_request,
    status_list,
    status_request,
)

DEFAULT_TARGET = "localhost:8500"

Timeout = float | None | EllipsisType


def _channel_options(max_message_bytes: int) -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]


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
