"""The worker's serving loop: requests off the channel one at a time, in order, each answered.

Every request gets exactly one reply, success or failure (see :mod:`channel.messages`); one that
does not decode gets INVALID_ARGUMENT. The loop ends on ``stop`` (reply, exit 0) or when
``stopping()`` turns true (SIGTERM): the request in hand is finished and answered, every one
still queued is answered UNAVAILABLE, and the loop returns 0.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from channel import logs, messages
from channel.dtypes import STRING, dtype_name
from channel.messages import (
    BadRequest,
    LoadRequest,
    Reply,
    Request,
    RunReply,
    RunRequest,
    TensorDesc,
    WorkerError,
)
from channel.shm.arena import align_up
from channel.shm.channel import Channel, ChannelFull, OutputArenaExhausted
from channel.shm.payload import read_tensor, tensor_nbytes, write_tensor
from channel.telemetry import Telemetry
from channel.wire import SpanForm
from workers.backends import onnx as onnx_backend
from workers.backends import tensorflow as tf_backend

log = logging.getLogger(__name__)

_POST_WAIT_S = 30.0
"""How long a reply waits for a free completion slot before the worker gives up (the gateway
caps in-flight work below the ring size, so waiting at all means it is stuck)."""


class Model(Protocol):
    """A loaded model as the loop sees it (one per backend: :mod:`workers.backends.onnx`,
    :mod:`workers.backends.tensorflow`).

    ``signature`` is the ``load`` reply's ``"signature"``; ``text_strings`` says whether string
    inputs reach :meth:`run` decoded as UTF-8 ``str`` (ONNX Runtime) or as ``bytes``
    (TensorFlow: serialized Examples are binary). :meth:`run` gets the run request's
    ``"signature"`` name (``""``: the default); a backend with one signature ignores it.
    """

    path: str
    text_strings: bool

    @property
    def signature(self) -> Mapping[str, Any]: ...

    def run(
        self,
        signature_name: str,
        inputs: dict[str, np.ndarray[Any, Any]],
        output_names: list[str] | None,
    ) -> dict[str, np.ndarray[Any, Any]]: ...

    def close(self) -> None: ...


class _OnnxModel:
    """An :class:`~workers.backends.onnx.OnnxModel` as a :class:`Model` (one signature)."""

    text_strings = True

    def __init__(self, model: onnx_backend.OnnxModel) -> None:
        self.path = model.path
        self._model = model

    @property
    def signature(self) -> Mapping[str, Any]:
        return self._model.signature

    def run(
        self,
        signature_name: str,
        inputs: dict[str, np.ndarray[Any, Any]],
        output_names: list[str] | None,
    ) -> dict[str, np.ndarray[Any, Any]]:
        return self._model.run(inputs, output_names)

    def close(self) -> None:
        pass


def _load_onnx(request: LoadRequest, max_output_bytes: int) -> Model:
    model = onnx_backend.load(
        request["path"],
        intra_op=request["intra_op"],
        inter_op=request["inter_op"],
        max_output_bytes=max_output_bytes,
    )
    return _OnnxModel(model)


def _load_tensorflow(request: LoadRequest, max_output_bytes: int) -> Model:
    """``path`` is the SavedModel directory; ``tags`` the MetaGraphDef's tags. TensorFlow's
    native start-up lines are kept out of the log (:func:`channel.logs.native_stderr`); its
    outputs are bounded only when written (``max_output_bytes`` is not used)."""
    with logs.native_stderr():
        return tf_backend.load(
            request["path"],
            tags=request["tags"],
            intra_op=request["intra_op"],
            inter_op=request["inter_op"],
        )


LOADERS: dict[str, Callable[[LoadRequest, int], Model]] = {
    "onnx": _load_onnx,
    "tensorflow": _load_tensorflow,
}
"""Model loaders by ``platform``, given the load request and the bytes one run's outputs may
take (the output area's capacity)."""


class Worker:
    """The models loaded in this process and the handler of each request.

    ``load`` of a key already loaded from the same path answers with its signature without
    reloading; from another path it replaces the model.
    """

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.models: dict[str, Model] = {}
        self.runs: dict[str, int] = {}
        """Runs per loaded key since its load (``ping`` with a key reports them)."""
        self.compute_spans: dict[str, SpanForm] = {}
        """The form of a traced run's ``compute`` span, per loaded key."""
        self.telemetry = Telemetry()

    def handle(self, request: Request) -> Reply:
        """The reply to one request; never raises for a bad request or a failed run.

        Every ``run`` reply, failed ones too, carries ``out_end``: releasing it frees this run's
        output space (if it got any) and that of every earlier run.
        """
        request_id = request["id"]
        try:
            if request["op"] == "run":
                return self._run(request)
            if request["op"] == "load":
                return messages.load_reply(request_id, self._load(request))
            if request["op"] == "unload":
                self._unload(request["key"])
                return messages.ok_reply(request_id)
            if request["op"] == "ping":
                key = request.get("key")
                runs = None if key is None else self.runs.get(key, 0)
                return messages.ping_reply(
                    request_id, os.getpid(), runs=runs, stats=self.telemetry.stats()
                )
            return messages.ok_reply(request_id)  # stop: the loop ends after replying
        except WorkerError as exc:
            error = exc
        except Exception as exc:
            log.exception("%s request %d failed", request["op"], request_id)
            error = WorkerError("INTERNAL", f"{type(exc).__name__}: {exc}")
        out_end = self.channel.output_allocated if request["op"] == "run" else None
        try:
            return error.reply(request_id, out_end=out_end)
        finally:
            # The failed run's frames, its outputs included, hang off the error's traceback in
            # a cycle through this frame; CPython collects cycles as allocations outnumber frees,
            # which a steady serving loop hardly ever makes them do: break it here.
            del error

    def _load(self, request: LoadRequest) -> Mapping[str, Any]:
        key, path, platform = request["key"], request["path"], request["platform"]
        loaded = self.models.get(key)
        if loaded is not None and loaded.path == path:
            return loaded.signature
        loader = LOADERS.get(platform)
        if loader is None:
            raise WorkerError(
                "UNIMPLEMENTED",
                f"platform {platform!r} is not served by tensorgate workers "
                f"(supported: {', '.join(sorted(LOADERS))})",
            )
        started = time.perf_counter()
        model = loader(request, self.channel.output_capacity)
        seconds = time.perf_counter() - started
        if loaded is not None:
            loaded.close()
        self.models[key] = model
        self.runs[key] = 0
        self.compute_spans[key] = SpanForm.of("compute", {"tensorgate.model": key})
        self.telemetry.loaded(key, seconds)
        log.info("loaded %s from %s in %.3f s", key, path, seconds)
        return model.signature

    def _unload(self, key: str) -> None:
        model = self.models.pop(key, None)
        self.runs.pop(key, None)
        self.compute_spans.pop(key, None)
        self.telemetry.unloaded(key)
        if model is not None:
            model.close()
            log.info("unloaded %s", key)

    def _run(self, request: RunRequest) -> RunReply:
        deadline = request["deadline"]
        if deadline is not None and time.monotonic() >= deadline:
            raise WorkerError("DEADLINE_EXCEEDED", "deadline exceeded before the batch ran")
        key = request["key"]
        model = self.models.get(key)
        if model is None:
            raise WorkerError("NOT_FOUND", f"model {key!r} is not loaded in this worker")
        feeds = dict(self._input(t, model.text_strings) for t in request["inputs"])
        trace = self.telemetry.trace(request.get("trace"))
        started = time.perf_counter_ns()
        self.runs[key] += 1
        try:
            results = model.run(request["signature"], feeds, request["outputs"])
        except BaseException:
            if trace is not None:
                trace.abandon()
            raise
        compute_us = (time.perf_counter_ns() - started) / 1000
        spans = None
        if trace is not None:
            spans = trace.finish(self.compute_spans[key])
        del feeds
        outputs = self._write_outputs(results)
        return messages.run_reply(
            request["id"],
            outputs=outputs,
            out_end=self.channel.output_allocated,
            compute_us=compute_us,
            spans=spans,
        )

    def _input(self, desc: TensorDesc, as_text: bool) -> tuple[str, np.ndarray[Any, Any]]:
        """A zero-copy array over the input area (string tensors: a fresh array of ``str`` when
        ``as_text``, else of ``bytes``)."""
        name = desc["name"]
        try:
            view = self.channel.input_view(desc["offset"], desc["nbytes"])
            arr = read_tensor(view, desc["dtype"], desc["shape"])
        except ValueError as exc:
            raise WorkerError("INVALID_ARGUMENT", f"input tensor {name!r}: {exc}") from None
        if desc["dtype"] != STRING or not as_text:
            return name, arr
        try:
            text = [item.decode("utf-8") for item in arr.reshape(-1).tolist()]
        except UnicodeDecodeError:
            raise WorkerError(
                "INVALID_ARGUMENT", f"string input {name!r} is not valid UTF-8"
            ) from None
        out = np.empty(len(text), dtype=object)
        out[:] = text
        return name, out.reshape(arr.shape)

    def _write_outputs(self, results: dict[str, np.ndarray[Any, Any]]) -> list[TensorDesc]:
        """Copy ``results`` into one block of the output area (strings encoded as UTF-8)."""
        descs: list[TensorDesc] = []
        arrays: list[np.ndarray[Any, Any]] = []
        total = 0
        for name, value in results.items():
            arr = np.asarray(value)
            if arr.dtype.kind in "OUS":
                encoded = np.empty(arr.size, dtype=object)
                encoded[:] = [
                    item.encode("utf-8") if isinstance(item, str) else item
                    for item in arr.reshape(-1).tolist()
                ]
                arr = encoded.reshape(arr.shape)
            nbytes = tensor_nbytes(arr)
            descs.append(
                {
                    "name": name,
                    "dtype": dtype_name(arr.dtype),
                    "shape": list(arr.shape),
                    "offset": total,  # relative to the block until it is allocated
                    "nbytes": nbytes,
                }
            )
            arrays.append(arr)
            total += align_up(nbytes)
        try:
            base = self.channel.alloc_output(total)
        except OutputArenaExhausted as exc:
            raise WorkerError("RESOURCE_EXHAUSTED", str(exc)) from None
        for desc, arr in zip(descs, arrays, strict=True):
            desc["offset"] += base
            write_tensor(self.channel.output_view(desc["offset"], desc["nbytes"]), arr)
        return descs


def _post(channel: Channel, reply: Reply) -> None:
    """Post ``reply``, waiting for a free slot; a reply too big for a slot becomes INTERNAL."""
    deadline = time.monotonic() + _POST_WAIT_S
    data = messages.encode(reply)
    while True:
        try:
            channel.post_completion(data)
            return
        except ChannelFull:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.0005)
        except ValueError as exc:
            log.error("reply to id %d does not fit a slot: %s", reply["id"], exc)
            out_end = reply.get("out_end")
            error = messages.error_reply(
                reply["id"],
                "INTERNAL",
                f"reply too large: {exc}",
                out_end=out_end if isinstance(out_end, int) else None,
            )
            data = messages.encode(error)


def _decode(data: bytes) -> Request | BadRequest:
    try:
        return messages.decode_request(data)
    except BadRequest as exc:
        return exc


def _refuse(channel: Channel, requests: list[Request | BadRequest]) -> None:
    for request in requests:
        request_id = request.request_id if isinstance(request, BadRequest) else request["id"]
        _post(channel, WorkerError("UNAVAILABLE", "worker is shutting down").reply(request_id))


def serve(channel: Channel, stopping: Callable[[], bool], wake_fd: int | None = None) -> int:
    """Announce readiness, then serve requests until ``stop`` or ``stopping()``; returns the exit
    status (0). ``wake_fd`` is a descriptor that becomes readable when a signal arrives."""
    worker = Worker(channel)
    _post(channel, messages.ready(os.getpid()))
    while True:
        batch = [_decode(data) for data in channel.wait_submissions(None, wake_fd=wake_fd)]
        for i, request in enumerate(batch):
            if isinstance(request, BadRequest):
                _post(channel, request.reply(request.request_id))
                continue
            reply = worker.handle(request)
            if request["op"] == "run":
                worker.telemetry.count_run(reply["ok"])
            _post(channel, reply)
            if request["op"] == "stop" or stopping():
                _refuse(channel, batch[i + 1 :])
                _refuse(channel, [_decode(data) for data in channel.wait_submissions(0)])
                log.info("worker %d stopping", channel.index)
                return 0
        if stopping():
            _refuse(channel, [_decode(data) for data in channel.wait_submissions(0)])
            log.info("worker %d stopping", channel.index)
            return 0
