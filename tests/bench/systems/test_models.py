"""bench.systems.models: the bench MLP runs in ONNX Runtime as described; inputs are seeded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from bench.systems.models import (
    INPUT_NAMES,
    OUTPUT_NAME,
    ensure_models,
    input_shape,
    model_path,
    sample_input,
)


def test_the_mlp_maps_64_features_to_10_probabilities(tmp_path: Path) -> None:
    dirs = ensure_models(tmp_path, ("mlp",))
    assert dirs == {"mlp": tmp_path / "mlp"}
    path = model_path(tmp_path, "mlp")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (probabilities,) = session.run([OUTPUT_NAME], {INPUT_NAMES["mlp"]: sample_input("mlp", 3)})
    assert probabilities.shape == (3, 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    built = path.stat().st_mtime_ns
    ensure_models(tmp_path, ("mlp",))  # present: left as it is
    assert path.stat().st_mtime_ns == built


def test_inputs_are_seeded_and_shaped_per_model() -> None:
    assert input_shape("mlp", 4) == (4, 64)
    assert input_shape("resnet50") == (1, 224, 224, 3)
    a, b = sample_input("mlp", 2), sample_input("mlp", 2)
    assert a.dtype == np.float32 and np.array_equal(a, b)
    assert not np.array_equal(a, sample_input("mlp", 2, seed=1))
    with pytest.raises(ValueError, match="unknown model"):
        input_shape("bert")
