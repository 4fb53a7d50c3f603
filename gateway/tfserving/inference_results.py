"""TF Serving's checks on what a classification or a regression produced
(``servables/tensorflow/classifier.cc``'s and ``regressor.cc``'s ``PostProcess*Result``, error
texts included), and the checked results as :mod:`gateway.tfserving.inference` hands them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from gateway.errors import InvalidArgument
from gateway.tfserving.codec import tensor_types

CLASSES: Final = "classes"
SCORES: Final = "scores"


@dataclass(frozen=True)
class Classifications:
    """``k`` classes per example: ``labels`` bytes ``[n, k]`` and/or ``scores`` float32
    ``[n, k]`` (None when the model gives no such tensor)."""

    labels: npt.NDArray[np.object_] | None
    scores: npt.NDArray[np.float32] | None

    @property
    def shape(self) -> tuple[int, int]:
        """``(examples, classes per example)``."""
        array = self.labels if self.labels is not None else self.scores
        if array is None:
            return (0, 0)
        n, k = array.shape
        return (n, k)


@dataclass(frozen=True)
class Regressions:
    """One float32 value per example: ``values`` ``[n]``."""

    values: npt.NDArray[np.float32]


def classifications(
    n: int, classes: np.ndarray | None, scores: np.ndarray | None
) -> Classifications:
    """Check a classification's output tensors for ``n`` examples (TF Serving's
    PostProcessClassificationResult) and return them; InvalidArgument says what is wrong."""
    for name, array, dtype in ((CLASSES, classes, "string"), (SCORES, scores, "float32")):
        if array is None:
            continue
        if array.ndim != 2:
            raise InvalidArgument(
                "Expected Tensor shape: [batch_size num_classes] but got " + _shape(array)
            )
        if _dtype(array) != dtype:
            raise InvalidArgument(
                f"Expected {name} Tensor of {_dt(dtype)}. Got: {_dt(_dtype(array))}"
            )
        if array.shape[0] != n:
            raise InvalidArgument(
                f"Expected {name} output batch size of {n}. Got: {array.shape[0]}"
            )
    if classes is not None and scores is not None and classes.shape[1] != scores.shape[1]:
        raise InvalidArgument(
            "Tensors class and score should match in dim_size(1). "
            f"Got {classes.shape[1]} vs. {scores.shape[1]}"
        )
    return Classifications(classes, scores)


def regressions(n: int, outputs: np.ndarray) -> Regressions:
    """Check a regression's output tensor for ``n`` examples (TF Serving's
    PostProcessRegressionResult) and return it as ``[n]``; InvalidArgument says what is wrong."""
    if not (outputs.ndim == 1 or (outputs.ndim == 2 and outputs.shape[1] == 1)):
        raise InvalidArgument(
            "Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got "
            + _shape(outputs)
        )
    if outputs.shape[0] != n:
        raise InvalidArgument(
            f"Input batch size did not match output batch size: {n} vs. {outputs.shape[0]}"
        )
    if _dtype(outputs) != "float32":
        raise InvalidArgument(f"Expected output Tensor of DT_FLOAT.  Got: {_dt(_dtype(outputs))}")
    return Regressions(outputs.reshape(n))


def _shape(array: np.ndarray) -> str:
    return "[" + ",".join(str(d) for d in array.shape) + "]"


def _dtype(array: np.ndarray) -> str:
    return "string" if array.dtype.kind in "OSU" else str(array.dtype)


def _dt(name: str) -> str:
    """TensorFlow's DataType name for a canonical dtype name (``float32`` → ``DT_FLOAT``)."""
    return tensor_types.data_type_name(name)
