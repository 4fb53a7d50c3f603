"""Which SavedModels OpenVINO serves: TF Serving's test SavedModels and Keras models, built here.

Usage: ``python scripts/openvino_conversions.py OUT_DIR`` (needs the ``tensorflow`` and
``openvino`` extras). Nothing is downloaded: TF Serving's test SavedModels are built by the
tests' builder scripts (``tests/support/tf_compat_models_script.py``,
``tests/support/tf_models_script.py``, each in its own process), the Keras models from
``keras.applications`` and ``keras.Sequential`` with random weights (``weights=None``, seed 0),
exported for serving (``model.export``). Each SavedModel is loaded as the worker loads it
(:func:`workers.backends.openvino.load`, fp32, one thread); one that loads is run on a seeded
random input (dynamic dimensions 2) and compared with TensorFlow's ``serving_default``.
Writes ``OUT_DIR/conversions.json`` and ``OUT_DIR/conversions.md`` (a table).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from workers.backends import openvino as openvino_backend  # noqa: E402

BUILDERS = {
    "tests/support/tf_compat_models_script.py": "TF Serving test",
    "tests/support/tf_models_script.py": "tensorgate test",
}
"""The SavedModel builders and how the table names their models: TF Serving's own test models,
and tensorgate's (half_plus_two / half_plus_three as TF Serving's ``tf.Example`` graphs, a TF2
module with several signatures, a Keras export)."""
KERAS = {
    "keras ResNet50": lambda: keras.applications.ResNet50(weights=None),
    "keras MobileNetV2": lambda: keras.applications.MobileNetV2(weights=None),
    "keras EfficientNetB0": lambda: keras.applications.EfficientNetB0(weights=None),
    "keras Sequential Dense": lambda: keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(4)]
    ),
    "keras LSTM": lambda: keras.Sequential(
        [keras.Input((10, 8)), keras.layers.LSTM(16), keras.layers.Dense(2)]
    ),
    "keras Embedding + Conv1D": lambda: keras.Sequential(
        [
            keras.Input((20,), dtype="int32"),
            keras.layers.Embedding(100, 8),
            keras.layers.Conv1D(8, 3),
            keras.layers.GlobalMaxPooling1D(),
            keras.layers.Dense(3),
        ]
    ),
}


def saved_models(root: Path) -> dict[str, Path]:
    """Every SavedModel to try, by the name the table shows."""
    found: dict[str, Path] = {}
    for script, label in BUILDERS.items():
        out = root / Path(script).stem
        if not out.exists():
            subprocess.run([sys.executable, str(REPO / script), str(out)], check=True)
        for pb in sorted(out.glob("*/*/saved_model.pb")):
            found[f"{label}: {pb.parent.parent.name}"] = pb.parent
    keras.utils.set_random_seed(0)
    for name, build in KERAS.items():
        path = root / "keras" / name.split(" ", 1)[1].replace(" ", "_").replace("+", "") / "1"
        if not path.exists():
            build().export(str(path), verbose=False)
        found[name] = path
    return found


def _feed(spec: tf.TensorSpec, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    shape = [2 if d is None else d for d in spec.shape]
    if spec.dtype.is_integer:
        return rng.integers(0, 10, shape).astype(spec.dtype.as_numpy_dtype)
    return rng.random(shape, dtype=np.float32).astype(spec.dtype.as_numpy_dtype)


def try_one(path: Path) -> dict[str, Any]:
    """``{"converts": bool, "reason"?, "max_rel"?}`` for the SavedModel at ``path``."""
    try:
        served = openvino_backend.load(
            str(path), precision="fp32", intra_op=1, max_output_bytes=1 << 30
        )
    except Exception as exc:
        return {"converts": False, "reason": getattr(exc, "message", str(exc)).split(": ", 1)[-1]}
    function = tf.saved_model.load(str(path)).signatures["serving_default"]
    rng = np.random.default_rng(0)
    feeds = {k: _feed(v, rng) for k, v in function.structured_input_signature[1].items()}
    want = {k: v.numpy() for k, v in function(**feeds).items()}
    got = served.run("", feeds, None)
    if sorted(got) != sorted(want):
        return {"converts": False, "reason": f"outputs {sorted(got)} != {sorted(want)}"}
    rel = max(
        float(np.abs(got[k] - want[k]).max()) / (float(np.abs(want[k]).max()) or 1.0) for k in want
    )
    return {"converts": True, "max_rel": rel}


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = {name: try_one(path) for name, path in saved_models(out / "models").items()}
    (out / "conversions.json").write_text(json.dumps(results, indent=1))
    lines = [
        "| SavedModel | on OpenVINO (fp32) | max rel error vs TensorFlow / reason |",
        "|---|---|---|",
    ]
    for name, r in results.items():
        detail = f"{r['max_rel']:.1e}" if r["converts"] else r["reason"][:160].replace("|", "/")
        lines.append(
            f"| {name} | {'converts' if r['converts'] else 'does not convert'} | {detail} |"
        )
    (out / "conversions.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
