"""Without the ``[tensorflow]`` extra (the base install, the default image), loading a SavedModel
fails with FAILED_PRECONDITION naming the extra, instead of an ImportError traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from channel.messages import WorkerError
from workers.backends import tensorflow as tf_backend


def test_missing_tensorflow_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "saved_model.pb").write_bytes(b"")
    # None in sys.modules is how Python marks a module as not importable: `import tensorflow`
    # raises ModuleNotFoundError, as in an environment without it.
    monkeypatch.setitem(sys.modules, "tensorflow", None)
    with pytest.raises(WorkerError) as raised:
        tf_backend.load(str(tmp_path), tags=["serve"], intra_op=1, inter_op=1)
    assert raised.value.code == "FAILED_PRECONDITION"
    assert "pip install 'tensorgate[tensorflow]'" in raised.value.message
