"""Where things are in the repository, for tests in any folder."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SUPPORT = REPO_ROOT / "tests" / "support"
DEMO_MODEL = REPO_ROOT / "models" / "digits" / "1" / "model.onnx"
