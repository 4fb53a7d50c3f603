"""TF Serving's checks on a classification's or a regression's outputs (``PostProcess*Result``,
error texts included), in process."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gateway.errors import InvalidArgument
from gateway.tfserving.inference_results import Classifications, classifications, regressions


def labels(*rows: list[bytes]) -> np.ndarray:
    out = np.empty((len(rows), len(rows[0])), dtype=object)
    out[:] = [list(row) for row in rows]
    return out


def test_classification_checks() -> None:
    scores = np.array([[0.1, 0.9]], np.float32)
    result = classifications(1, labels([b"a", b"b"]), scores)
    assert result.shape == (1, 2)
    assert classifications(1, None, scores).shape == (1, 2)
    cases: list[tuple[tuple[Any, ...], str]] = [
        ((1, None, np.zeros(2, np.float32)), "Expected Tensor shape: [batch_size num_classes] "
         "but got [2]"),
        ((1, None, np.zeros((1, 2))), "Expected scores Tensor of DT_FLOAT. Got: DT_DOUBLE"),
        ((1, np.zeros((1, 2), np.int64), None), "Expected classes Tensor of DT_STRING. "
         "Got: DT_INT64"),
        ((2, None, scores), "Expected scores output batch size of 2. Got: 1"),
        ((1, labels([b"a"]), scores), "Tensors class and score should match in dim_size(1). "
         "Got 1 vs. 2"),
    ]  # fmt: skip
    for args, message in cases:
        with pytest.raises(InvalidArgument) as info:
            classifications(*args)
        assert info.value.message == message


def test_regression_checks() -> None:
    np.testing.assert_array_equal(
        regressions(2, np.array([[1.0], [2.0]], np.float32)).values, [1.0, 2.0]
    )
    cases: list[tuple[tuple[Any, ...], str]] = [
        ((1, np.zeros((1, 2), np.float32)), "Expected output Tensor shape to be either "
         "[batch_size] or [batch_size, 1] but got [1,2]"),
        ((2, np.zeros(1, np.float32)), "Input batch size did not match output batch size: "
         "2 vs. 1"),
        ((1, np.zeros(1, np.int32)), "Expected output Tensor of DT_FLOAT.  Got: DT_INT32"),
    ]  # fmt: skip
    for args, message in cases:
        with pytest.raises(InvalidArgument) as info:
            regressions(*args)
        assert info.value.message == message


def test_a_classification_without_tensors_is_empty() -> None:
    assert Classifications(None, None).shape == (0, 0)
