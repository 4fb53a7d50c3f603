"""bench.systems.models: the bench MLP and the probes' models run in ONNX Runtime as described;
inputs are seeded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from bench.systems import models
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


def _run(path: Path, **inputs: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return list(session.run(None, inputs))


def test_the_probes_models_compute_what_their_callers_ask(tmp_path: Path) -> None:
    x2 = np.zeros((1, 2), np.float32)
    (looped,) = _run(models.looped(tmp_path / "l.onnx"), x=x2, k=np.array([5], np.int64))
    np.testing.assert_array_equal(looped, [[5.0, 5.0]])
    failing = models.looped(tmp_path / "f.onnx", addend=True)
    with pytest.raises(Exception, match="Add"):  # after the loop: z's width does not broadcast
        _run(failing, x=x2, k=np.array([3], np.int64), z=np.zeros((1, 3), np.float32))
    (gram,) = _run(models.gram_squared(tmp_path / "g.onnx"), x=np.ones((2, 5), np.float32))
    np.testing.assert_array_equal(gram, [[25 * 20.0]])  # xᵀx is 2 everywhere, its square 20
    (wide,) = _run(
        models.widened(tmp_path / "w.onnx"),
        x=np.ones((2, 1), np.float32),
        n=np.array([3, 7], np.int64),
    )
    assert wide.shape == (2, 7)
    (tiled,) = _run(models.tiled(tmp_path / "t.onnx", 1000), x=np.full((3, 1), 2, np.float32))
    assert tiled.shape == (3, 1000) and (tiled == 2).all()
    (doubled,) = _run(models.doubled(tmp_path / "d.onnx"), x=np.ones((4, 1), np.float32))
    np.testing.assert_array_equal(doubled, np.full((4, 1), 2.0))


def test_the_conv_stack_is_a_small_file_and_external_weights_sit_beside_theirs(
    tmp_path: Path,
) -> None:
    conv = models.conv_stack(tmp_path / "conv" / "model.onnx")
    assert conv.stat().st_size < 8000
    size = models.CONV_SIZE
    (pooled,) = _run(conv, x=np.ones((2, 3, size, size), np.float32))
    assert pooled.shape == (2, 8)
    external = models.external_weights(tmp_path / "ext" / "model.onnx", 2**20, features=64)
    weights = external.parent / "weights.bin"
    assert external.stat().st_size < 1000 and weights.stat().st_size == 2**20
    (out,) = _run(external, x=np.ones((1, 64), np.float32))
    assert out.shape == (1, 2**20 // (4 * 64))


def test_the_mlp_takes_a_hidden_width(tmp_path: Path) -> None:
    narrow = models.build_mlp(tmp_path / "a.onnx")
    wide = models.build_mlp(tmp_path / "b.onnx", hidden=512)
    assert wide.stat().st_size > 3 * narrow.stat().st_size
    (probabilities,) = _run(wide, x=np.ones((2, 64), np.float32))
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
