"""A loaded model as the worker's loop sees it (:class:`Model`), and the loaders by platform.

One backend per platform (:mod:`workers.backends.onnx`, :mod:`workers.backends.tensorflow`):
:func:`loader_for` picks the one a ``load`` request's ``"platform"`` names (:data:`LOADERS`), or
the one its ``"runtime"`` names (:data:`RUNTIME_LOADERS`: ``openvino``,
:mod:`workers.backends.openvino`, for either platform). TensorFlow and OpenVINO are imported only
by their first load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from channel import logs
from channel.messages import LoadRequest, WorkerError
from workers.backends import onnx as onnx_backend
from workers.backends import openvino as openvino_backend
from workers.backends import tensorflow as tf_backend


class Model(Protocol):
    """A loaded model as the loop sees it.

    ``signature`` is the ``load`` reply's ``"signature"``; ``text_strings`` says whether string
    inputs reach :meth:`run` decoded as UTF-8 ``str`` (ONNX Runtime) or as ``bytes``
    (TensorFlow: serialized Examples are binary). :meth:`run` gets the run request's
    signature name last (``""``: the default); a backend with one signature (ONNX Runtime,
    OpenVINO) does not consult it.
    """

    path: str
    text_strings: bool

    @property
    def signature(self) -> Mapping[str, Any]: ...

    def run(
        self,
        inputs: dict[str, np.ndarray[Any, Any]],
        output_names: Sequence[str] | None,
        signature_name: str = "",
    ) -> dict[str, np.ndarray[Any, Any]]: ...

    def close(self) -> None: ...


def _load_onnx(request: LoadRequest, max_output_bytes: int) -> Model:
    return onnx_backend.load(
        request["path"],
        intra_op=request["intra_op"],
        inter_op=request["inter_op"],
        max_output_bytes=max_output_bytes,
    )


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


def _load_openvino(request: LoadRequest, max_output_bytes: int) -> Model:
    """Either platform on OpenVINO, at the request's ``precision`` (``fp32`` when absent)."""
    return openvino_backend.load(
        request["path"],
        precision=request.get("precision", "fp32"),
        intra_op=request["intra_op"],
        max_output_bytes=max_output_bytes,
        tags=request["tags"],
    )


ModelLoader = Callable[[LoadRequest, int], Model]
"""Loads a model, given the load request and the bytes one run's outputs may take (the output
area's capacity)."""

LOADERS: dict[str, ModelLoader] = {
    "onnx": _load_onnx,
    "tensorflow": _load_tensorflow,
}
"""Model loaders by ``platform`` (its own runtime)."""

RUNTIME_LOADERS: dict[str, ModelLoader] = {"openvino": _load_openvino}
"""Model loaders by the ``runtime`` a load request chooses instead (any platform)."""


def loader_for(request: LoadRequest) -> ModelLoader:
    """The loader of ``request``: its ``runtime``'s when it names one, else its ``platform``'s.
    WorkerError UNIMPLEMENTED for a platform or runtime the workers do not have."""
    platform = request["platform"]
    loader = LOADERS.get(platform)
    if loader is None:
        raise WorkerError(
            "UNIMPLEMENTED",
            f"platform {platform!r} is not served by tensorgate workers "
            f"(supported: {', '.join(sorted(LOADERS))})",
        )
    runtime = request.get("runtime")
    if not runtime:
        return loader
    chosen = RUNTIME_LOADERS.get(runtime)
    if chosen is None:
        raise WorkerError(
            "UNIMPLEMENTED",
            f"runtime {runtime!r} is not one tensorgate workers have "
            f"(supported: {', '.join(sorted(RUNTIME_LOADERS))})",
        )
    return chosen
