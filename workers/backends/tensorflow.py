"""TensorFlow SavedModels for the worker: load one the way TF Serving does, run it by signature.

TensorFlow is imported by the first :func:`load` only. Each SavedModel gets its own graph and
``tf.compat.v1.Session``, loaded with ``tf.compat.v1.saved_model.loader.load`` and the
MetaGraphDef's tags — the path TF Serving takes, which also serves TF1-style models with
ParseExample signatures (``tf.saved_model.load``'s v1→v2 pruning fails on those). The session runs
on the CPU with exactly the intra-op / inter-op thread counts given.

Signatures are the MetaGraphDef's ``signature_def`` map, every one of them reported (TF Serving
lists them all in its metadata). One whose tensors are not all dense, named tensors of a canonical
dtype cannot be fed or fetched: it is reported for the metadata only
(:mod:`workers.backends.tf_signatures`), with a warning (silently for TF2's
``__saved_model_init_op``, a NoOp with dtype DT_INVALID).

A run feeds each input alias to its graph tensor and fetches the requested output aliases through
the C++ ``Session::MakeCallable`` path, as TF Serving's ``Session::Run`` does: fed shapes are not
checked against the graph's static shapes (the ops decide); dtypes are. String tensors are numpy
object arrays of ``bytes`` both ways (never decoded: serialized Examples are binary).

The ``load`` reply's ``signature`` is ``{"signatures": {name: {"inputs": [...], "outputs":
[...], "method_name": ...}}}``; every WireTensorSpec there also carries its graph ``tensor_name``. A
signature that cannot be served has no inputs or outputs there but ``"unservable"`` (why) and
``"definition"`` (its SignatureDef, serialized, base64) for the metadata.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from channel.messages import DEFAULT_SIGNATURE, WorkerError
from workers.backends.tf_signatures import (
    ServedSignature,
    dtype_names,
    metadata_only,
    served_signature,
)

log = logging.getLogger(__name__)

INIT_OP_SIGNATURE: Final = "__saved_model_init_op"
"""TF2's initialisation pseudo-signature (a NoOp output): never served, not worth a warning."""

SAVED_MODEL_FILES: Final = ("saved_model.pb", "saved_model.pbtxt")

MAX_CALLABLES: Final = 64
"""Session callables kept per model, one per (fed tensors, fetched tensors) combination; the
least recently used is released beyond this."""

_CODES: Final = {
    1: "CANCELLED",
    2: "UNKNOWN",
    3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    10: "ABORTED",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
    16: "UNAUTHENTICATED",
}
"""TensorFlow's error codes (``tf.errors``) by number: the canonical status names."""


class TfModel:
    """One SavedModel in its own Session; :meth:`run` is called from one thread. String inputs
    are fed as ``bytes`` (``text_strings`` is False: serialized Examples are binary)."""

    text_strings = False

    def __init__(
        self,
        path: str,
        session: Any,
        signatures: dict[str, ServedSignature],
        op_error: type[Exception],
        callable_options: Callable[..., Any],
        metadata_only: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.path = path
        self._session = session
        self._op_error = op_error
        self._signatures = signatures
        self._callable_options = callable_options
        self._callables: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], Any] = OrderedDict()
        wire = {name: sig.wire for name, sig in signatures.items()}
        self.signature: dict[str, Any] = {"signatures": {**wire, **(metadata_only or {})}}

    def run(
        self,
        inputs: dict[str, np.ndarray[Any, Any]],
        output_names: Sequence[str] | None,
        signature_name: str = "",
    ) -> dict[str, np.ndarray[Any, Any]]:
        """Outputs by alias, in ``output_names`` order (None: every output of the signature).

        An empty ``signature_name`` means ``serving_default``. WorkerError FAILED_PRECONDITION
        for an unknown signature, INVALID_ARGUMENT for unknown aliases; a TensorFlow error keeps
        its own code and message.
        """
        name = signature_name or DEFAULT_SIGNATURE
        signature = self._signatures.get(name)
        if signature is None:
            raise WorkerError("FAILED_PRECONDITION", f'Serving signature key "{name}" not found.')
        feeds: dict[str, np.ndarray[Any, Any]] = {}
        for alias, array in inputs.items():
            tensor = signature.inputs.get(alias)
            if tensor is None:
                raise WorkerError(
                    "INVALID_ARGUMENT", f"input {alias!r} is not in signature {name!r}"
                )
            feeds[tensor] = array
        fed = tuple(sorted(feeds))
        names = list(signature.outputs) if output_names is None else output_names
        fetches: list[str] = []
        for alias in names:
            tensor = signature.outputs.get(alias)
            if tensor is None:
                raise WorkerError(
                    "INVALID_ARGUMENT", f"output {alias!r} is not in signature {name!r}"
                )
            fetches.append(tensor)
        try:
            values = self._callable(fed, tuple(fetches))(*(feeds[t] for t in fed))
        except self._op_error as exc:
            code = _CODES.get(int(getattr(exc, "error_code", 2)), "UNKNOWN")
            raise WorkerError(code, str(getattr(exc, "message", exc))) from None
        except MemoryError:
            raise WorkerError("RESOURCE_EXHAUSTED", "out of memory running the model") from None
        except (TypeError, ValueError) as exc:  # feeds the session refuses before running
            raise WorkerError("INVALID_ARGUMENT", str(exc)) from None
        return {alias: np.asarray(value) for alias, value in zip(names, values, strict=True)}

    def _callable(self, feeds: tuple[str, ...], fetches: tuple[str, ...]) -> Any:
        """The session callable feeding ``feeds`` (positionally) and fetching ``fetches``.

        ``Session._make_callable_from_options`` is TensorFlow's own (private) route to the C++
        ``Session::MakeCallable``: ``Session.run`` and the public ``make_callable`` add a Python
        check of fed shapes against static shapes that TF Serving's C++ session never makes.
        """
        key = (feeds, fetches)
        runner = self._callables.get(key)
        if runner is None:
            options = self._callable_options(feed=list(feeds), fetch=list(fetches))
            runner = self._session._make_callable_from_options(options)
            self._callables[key] = runner
            if len(self._callables) > MAX_CALLABLES:
                self._callables.popitem(last=False)
        else:
            self._callables.move_to_end(key)
        return runner

    def close(self) -> None:
        """Release the callables and the session (its graph and variables)."""
        self._callables.clear()
        self._session.close()


def load(path: str, *, tags: Sequence[str], intra_op: int, inter_op: int) -> TfModel:
    """Load the SavedModel directory ``path`` (the MetaGraphDef tagged exactly ``tags``) into a
    CPU session with ``intra_op`` / ``inter_op`` threads (each >= 1).

    WorkerError NOT_FOUND if there is no SavedModel or no MetaGraphDef with those tags,
    INVALID_ARGUMENT if it does not load, RESOURCE_EXHAUSTED when memory runs out,
    FAILED_PRECONDITION when TensorFlow is not installed.
    """
    if intra_op < 1 or inter_op < 1:
        raise WorkerError(
            "INVALID_ARGUMENT", f"intra_op and inter_op must be >= 1, got {intra_op}, {inter_op}"
        )
    if not any(os.path.isfile(os.path.join(path, f)) for f in SAVED_MODEL_FILES):
        raise WorkerError(
            "NOT_FOUND",
            "Could not find SavedModel .pb or .pbtxt at supplied export directory path: " + path,
        )
    tf = _tensorflow()
    v1 = tf.compat.v1
    config = v1.ConfigProto(
        intra_op_parallelism_threads=intra_op,
        inter_op_parallelism_threads=inter_op,
        device_count={"GPU": 0},
        allow_soft_placement=True,
    )
    graph = tf.Graph()
    session = v1.Session(graph=graph, config=config)
    try:
        with graph.as_default():
            meta_graph = v1.saved_model.loader.load(session, list(tags), path)
    except MemoryError:
        session.close()
        raise WorkerError("RESOURCE_EXHAUSTED", f"out of memory loading {path}") from None
    except RuntimeError as exc:  # no MetaGraphDef with these tags
        session.close()
        raise WorkerError(
            "NOT_FOUND",
            f"Could not find meta graph def matching supplied tags: {{ {' '.join(tags)} }}. "
            f"To inspect available tag-sets in the SavedModel, please use the SavedModel CLI: "
            f"`saved_model_cli` ({exc})",
        ) from None
    except Exception as exc:
        session.close()
        raise WorkerError("INVALID_ARGUMENT", f"cannot load SavedModel {path}: {exc}") from None
    signatures: dict[str, ServedSignature] = {}
    listed_only: dict[str, dict[str, Any]] = {}
    names = dtype_names(tf)
    for name, signature_def in meta_graph.signature_def.items():
        try:
            signatures[name] = served_signature(names, signature_def)
        except ValueError as exc:
            level = logging.DEBUG if name == INIT_OP_SIGNATURE else logging.WARNING
            log.log(level, "signature %r is not served: %s", name, exc)
            listed_only[name] = metadata_only(signature_def, str(exc))
    config_pb2 = importlib.import_module("tensorflow.core.protobuf.config_pb2")
    return TfModel(
        path, session, signatures, tf.errors.OpError, config_pb2.CallableOptions, listed_only
    )


def _tensorflow() -> Any:
    """The ``tensorflow`` module, imported on first use with its logging turned down.

    WorkerError FAILED_PRECONDITION, naming the extra to install, when TensorFlow is missing (the
    base install serves ONNX only).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        tf = importlib.import_module("tensorflow")
    except ImportError as exc:
        raise WorkerError(
            "FAILED_PRECONDITION",
            f"TensorFlow SavedModels need TensorFlow, which cannot be imported here ({exc}): "
            "install tensorgate with its [tensorflow] extra (pip install 'tensorgate[tensorflow]', "
            "or the image's tensorflow target)",
        ) from None
    tf.get_logger().setLevel(logging.ERROR)
    return tf
