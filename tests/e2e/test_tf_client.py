"""The official tensorflow_serving.apis client, in its own process, against a real gateway."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.gateway_proc import GatewayProcess
from tests.support.ort import run_reference
from tests.support.paths import SUPPORT

SCRIPT = SUPPORT / "tf_client_script.py"


@pytest.mark.tfclient
def test_official_client_predict_metadata_status(
    gateway: GatewayProcess, model_repo: Path, tmp_path: Path
) -> None:
    x = np.random.default_rng(3).standard_normal((5, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), gateway.target, str(tmp_path / "in.npz"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads((tmp_path / "result.json").read_text())

    for npz, version in (("predict.npz", 2), ("predict_v1.npz", 1)):
        expected = run_reference(model_repo / "mlp" / str(version) / "model.onnx", {"x": x})
        with np.load(tmp_path / npz) as got:
            assert sorted(got.files) == ["logits", "probs"]
            for name, value in expected.items():
                assert got[name].dtype == np.float32
                np.testing.assert_array_equal(got[name], value)  # exact for float32
    assert result["predict_version"] == 2
    assert result["metadata"] == {
        "version": 2,
        "method_name": "tensorflow/serving/predict",
        "inputs": {"x": {"dtype": "float32", "shape": [-1, 64]}},
        "outputs": ["logits", "probs"],
    }
    assert result["status"] == [
        {"version": 1, "state": "AVAILABLE", "error_code": 0},
        {"version": 2, "state": "AVAILABLE", "error_code": 0},
    ]
    assert result["missing"] == ["NOT_FOUND", "Servable not found for request: Latest(missing)"]
