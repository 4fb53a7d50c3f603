"""The worker's serving loop: descriptors off the channel one at a time, in order, each answered.

Every request gets exactly one reply, success or failure (see :mod:`workers.messages` for the
descriptors). The loop ends on ``stop`` (reply, exit 0) or when ``stopping()`` turns true
(SIGTERM): the descriptor in hand is finished and answered, every one still queued is answered
UNAVAILABLE, and the loop returns 0.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import numpy as np

from workers.backends import onnx as onnx_backend
from workers.backends import tensorflow as tf_backend
from workers.dtypes import STRING, dtype_name
from workers.messages import TensorDesc, WorkerError, read_tensor, tensor_nbytes, write_tensor
from workers.shm.arena import align_up
from workers.shm.channel import Channel, ChannelFull, OutputArenaExhausted

log = logging.getLogger(__name__)

_POST_WAIT_S = 30.0
"""How long a reply waits for a free completion slot before the worker gives up (the gateway
caps in-flight work below the ring size, so waiting at all means it is stuck)."""


class Model(Protocol):
    """A loaded model as the loop sees it (one per backend: :mod:`workers.backends.onnx`,
    :mod:`workers.backends.tensorflow`).

    ``signature`` is the ``load`` reply's ``"signature"``; ``text_strings`` says whether string
    inputs reach :meth:`run` decoded as UTF-8 ``str`` (ONNX Runtime) or as ``bytes``
    (TensorFlow: serialized Examples are binary). :meth:`run` gets the run descriptor's
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


_T = TypeVar("_T")


def _field(desc: dict[str, Any], name: str, kind: type[_T]) -> _T:
    value = desc.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise WorkerError(
            "INVALID_ARGUMENT", f"{desc.get('op')} descriptor needs {kind.__name__} {name!r}"
        )
    return value


def _load_onnx(desc: dict[str, Any]) -> Model:
    return _OnnxModel(
        onnx_backend.load(
            _field(desc, "path", str),
            intra_op=_field(desc, "intra_op", int),
            inter_op=_field(desc, "inter_op", int),
        )
    )


def _load_tensorflow(desc: dict[str, Any]) -> Model:
    """``path`` is the SavedModel directory; ``tags`` (optional) the MetaGraphDef's tags."""
    tags = desc.get("tags", list(tf_backend.DEFAULT_TAGS))
    if not (isinstance(tags, list) and tags and all(isinstance(t, str) for t in tags)):
        raise WorkerError("INVALID_ARGUMENT", "load descriptor: tags must be a non-empty list")
    return tf_backend.load(
        _field(desc, "path", str),
        tags=tags,
        intra_op=_field(desc, "intra_op", int),
        inter_op=_field(desc, "inter_op", int),
    )


LOADERS: dict[str, Callable[[dict[str, Any]], Model]] = {
    "onnx": _load_onnx,
    "tensorflow": _load_tensorflow,
}
"""Model loaders by ``platform``."""


class Worker:
    """The models loaded in this process and the handlers of each descriptor ``op``.

    ``load`` of a key already loaded from the same path answers with its signature without
    reloading; from another path it replaces the model.
    """

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.models: dict[str, Model] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "load": self._load,
            "unload": self._unload,
            "run": self._run,
            "ping": self._ping,
            "stop": self._stop,
        }

    def handle(self, desc: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request; never raises for a bad request or a failed run.

        Every ``run`` reply, failed ones too, carries ``out_end``: releasing it frees this run's
        output space (if it got any) and that of every earlier run.
        """
        request_id = desc.get("id")
        op = desc.get("op")
        try:
            handler = self._handlers.get(op) if isinstance(op, str) else None
            if handler is None:
                raise WorkerError("INVALID_ARGUMENT", f"unknown op {op!r}")
            reply = {"id": request_id, "ok": True, **handler(desc)}
        except WorkerError as exc:
            reply = exc.reply(request_id)
        except Exception as exc:
            log.exception("op %r id %r failed", op, request_id)
            reply = WorkerError("INTERNAL", f"{type(exc).__name__}: {exc}").reply(request_id)
        if op == "run":
            reply["out_end"] = self.channel.output_allocated
        return reply

    def _ping(self, desc: dict[str, Any]) -> dict[str, Any]:
        return {"pid": os.getpid()}

    def _stop(self, desc: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _load(self, desc: dict[str, Any]) -> dict[str, Any]:
        key = _field(desc, "key", str)
        path = _field(desc, "path", str)
        platform = _field(desc, "platform", str)
        loaded = self.models.get(key)
        if loaded is not None and loaded.path == path:
            return {"signature": loaded.signature}
        loader = LOADERS.get(platform)
        if loader is None:
            raise WorkerError(
                "UNIMPLEMENTED",
                f"platform {platform!r} is not served by tensorgate workers "
                f"(supported: {', '.join(sorted(LOADERS))})",
            )
        model = loader(desc)
        if loaded is not None:
            loaded.close()
        self.models[key] = model
        log.info("loaded %s from %s", key, path)
        return {"signature": model.signature}

    def _unload(self, desc: dict[str, Any]) -> dict[str, Any]:
        key = _field(desc, "key", str)
        model = self.models.pop(key, None)
        if model is not None:
            model.close()
            log.info("unloaded %s", key)
        return {}

    def _run(self, desc: dict[str, Any]) -> dict[str, Any]:
        deadline = desc.get("deadline")
        if deadline is not None and not isinstance(deadline, int | float):
            raise WorkerError("INVALID_ARGUMENT", "run descriptor: deadline must be a number")
        if deadline is not None and time.monotonic() >= deadline:
            raise WorkerError("DEADLINE_EXCEEDED", "deadline exceeded before the batch ran")
        key = _field(desc, "key", str)
        model = self.models.get(key)
        if model is None:
            raise WorkerError("NOT_FOUND", f"model {key!r} is not loaded in this worker")
        output_names = desc.get("outputs")
        if output_names is not None and not (
            isinstance(output_names, list) and all(isinstance(n, str) for n in output_names)
        ):
            raise WorkerError("INVALID_ARGUMENT", "run descriptor: outputs must be names or null")
        signature = desc.get("signature") or ""
        if not isinstance(signature, str):
            raise WorkerError("INVALID_ARGUMENT", "run descriptor: signature must be a string")
        feeds = dict(self._input(t, model.text_strings) for t in _field(desc, "inputs", list))
        started = time.perf_counter_ns()
        results = model.run(signature, feeds, output_names)
        compute_us = (time.perf_counter_ns() - started) / 1000
        del feeds
        return {"outputs": self._write_outputs(results), "compute_us": round(compute_us, 1)}

    def _input(self, desc: TensorDesc, as_text: bool) -> tuple[str, np.ndarray[Any, Any]]:
        """A zero-copy array over the input area (string tensors: a fresh array of ``str`` when
        ``as_text``, else of ``bytes``)."""
        try:
            name = desc["name"]
            view = self.channel.input_view(desc["offset"], desc["nbytes"])
            arr = read_tensor(view, desc["dtype"], desc["shape"])
        except (KeyError, TypeError, ValueError) as exc:
            raise WorkerError("INVALID_ARGUMENT", f"bad input tensor descriptor: {exc!r}") from None
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


def _post(channel: Channel, reply: dict[str, Any]) -> None:
    """Post ``reply``, waiting for a free slot; a reply too big for a slot becomes INTERNAL."""
    deadline = time.monotonic() + _POST_WAIT_S
    while True:
        try:
            channel.post_completion(reply)
            return
        except ChannelFull:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.0005)
        except ValueError as exc:
            log.error("reply to id %r does not fit a slot: %s", reply.get("id"), exc)
            error = WorkerError("INTERNAL", f"reply too large: {exc}").reply(reply.get("id"))
            if "out_end" in reply:
                error["out_end"] = reply["out_end"]
            reply = error


def _refuse(channel: Channel, descs: list[dict[str, Any]]) -> None:
    for desc in descs:
        _post(channel, WorkerError("UNAVAILABLE", "worker is shutting down").reply(desc.get("id")))


def serve(channel: Channel, stopping: Callable[[], bool], wake_fd: int | None = None) -> int:
    """Announce readiness, then serve requests until ``stop`` or ``stopping()``; returns the exit
    status (0). ``wake_fd`` is a descriptor that becomes readable when a signal arrives."""
    worker = Worker(channel)
    _post(channel, {"id": 0, "ok": True, "op": "ready", "pid": os.getpid()})
    log.info("worker %d ready", channel.index)
    while True:
        batch = channel.wait_submissions(None, wake_fd=wake_fd)
        for i, desc in enumerate(batch):
            _post(channel, worker.handle(desc))
            if desc.get("op") == "stop" or stopping():
                _refuse(channel, batch[i + 1 :])
                _refuse(channel, channel.wait_submissions(0))
                log.info("worker %d stopping", channel.index)
                return 0
        if stopping():
            _refuse(channel, channel.wait_submissions(0))
            log.info("worker %d stopping", channel.index)
            return 0
