"""The committed demo model (``models/digits/1/model.onnx``) and the script that makes it."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import pytest

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
SCRIPT = ROOT / "scripts" / "make_demo_model.py"
MODEL = ROOT / "models" / "digits" / "1" / "model.onnx"
NEAR_TIE = 0.05
"""Top-two probability gap under which a rebuilt model may pick the other class."""
PROBABILITY_ATOL = 0.05


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """``scripts/make_demo_model.py`` as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("make_demo_model", SCRIPT)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {SCRIPT}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _session(path: pathlib.Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _predict(
    session: ort.InferenceSession, images: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    label, probabilities = session.run(["label", "probabilities"], {"images": images})
    return np.asarray(label), np.asarray(probabilities)


def test_committed_model_has_documented_signature() -> None:
    session = _session(MODEL)
    inputs = [(i.name, i.type, i.shape) for i in session.get_inputs()]
    outputs = [(o.name, o.type) for o in session.get_outputs()]
    assert len(inputs) == 1
    name, dtype, shape = inputs[0]
    assert (name, dtype) == ("images", "tensor(float)")
    assert len(shape) == 2 and not isinstance(shape[0], int) and shape[1] == 64
    assert outputs == [("label", "tensor(int64)"), ("probabilities", "tensor(float)")]
    assert session.get_outputs()[1].shape[1] == 10
    assert MODEL.stat().st_size < 200_000


def test_committed_model_classifies_held_out_digits(script: ModuleType) -> None:
    _, x_test, _, y_test = script.load_split()
    label, probabilities = _predict(_session(MODEL), x_test)
    assert label.dtype == np.int64 and label.shape == y_test.shape
    assert probabilities.dtype == np.float32 and probabilities.shape == (len(y_test), 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(label, probabilities.argmax(axis=1))
    assert float(np.mean(label == y_test)) > 0.9


def test_script_regenerates_an_equivalent_model(script: ModuleType, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "model.onnx"
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], check=True, timeout=120)
    x_train, x_test, _, _ = script.load_split()
    images = np.concatenate([x_train, x_test])
    committed_label, committed_probabilities = _predict(_session(MODEL), images)
    label, probabilities = _predict(_session(out), images)
    # Training is deterministic, but its floating-point sums depend on the machine's BLAS: the same
    # model up to rounding, so labels may differ only on near-ties of the committed model.
    top2 = np.sort(committed_probabilities, axis=1)[:, -2:]
    near_tie = (top2[:, 1] - top2[:, 0]) < NEAR_TIE
    assert not np.any((label != committed_label) & ~near_tie)
    np.testing.assert_allclose(probabilities, committed_probabilities, atol=PROBABILITY_ATOL)
