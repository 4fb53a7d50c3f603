"""A real worker process refusing outputs bigger than its output area, again and again, keeps its
memory: the refused outputs are never built when the declared shapes size them, and otherwise
are let go (with the runtime's arena) rather than kept, each, for good.

Each request sends one float (or one string) and asks for 64 MiB of outputs; 14 of them grew the
worker by some 900 MB before the fix. The bounds leave a wide margin over what the worker really
keeps (a few MB), and well under what a single leaked output would add.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto

from tests.support.expand_models import expand
from tests.support.worker_harness import Harness

MIB = 1 << 20
OUTPUT = 64 * MIB
"""Bytes each refused request asks for (far over the worker's 1 MiB output area)."""
REQUESTS = 14
ONE = np.ones((1, 1), np.float32)


def _rss(pid: int) -> int:
    """The resident set of process ``pid``, in bytes (``VmRSS``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("worker_memory")
    rows = OUTPUT // 4 // 1024
    return {
        "static": str(expand(root / "static.onnx", to=(rows, 1024))),
        "dynamic": str(expand(root / "dynamic.onnx", to=None)),
        "strings": str(expand(root / "strings.onnx", to=None, elem=TensorProto.STRING)),
    }


@pytest.fixture
def worker() -> Iterator[Harness]:
    harness = Harness(input_bytes=4 * MIB, output_bytes=MIB)
    try:
        yield harness
    finally:
        harness.close()


def _refuse_repeatedly(worker: Harness, key: str, feeds: dict[str, np.ndarray[Any, Any]]) -> int:
    """Send ``feeds`` to ``key`` REQUESTS times, each refused; the worker's growth in bytes."""
    before = _rss(worker.proc.pid)
    for _ in range(REQUESTS):
        reply, _ = worker.run(key, feeds)
        assert reply["code"] == "RESOURCE_EXHAUSTED", reply
        assert "exceed the worker's output arena of 1048576 bytes" in reply["message"]
    assert worker.ping()["ok"]
    return _rss(worker.proc.pid) - before


def test_outputs_the_declared_shapes_size_are_refused_without_being_built(
    worker: Harness, models: dict[str, str]
) -> None:
    assert worker.load("static", models["static"])["ok"]
    grown = _refuse_repeatedly(worker, "static", {"x": ONE})
    assert grown < OUTPUT // 4, f"the worker grew by {grown / MIB:.0f} MiB"


def test_outputs_only_the_run_sizes_are_let_go_and_the_arena_shrinks_after(
    worker: Harness, models: dict[str, str]
) -> None:
    assert worker.load("dynamic", models["dynamic"])["ok"]
    shape = np.array([OUTPUT // 4 // 1024, 1024], np.int64)
    small: dict[str, np.ndarray] = {"x": ONE, "shape": np.array([2, 3], np.int64)}
    reply, outputs = worker.run("dynamic", small)
    assert reply["ok"] and outputs["y"].shape == (2, 3)
    before = _rss(worker.proc.pid)
    grown = _refuse_repeatedly(worker, "dynamic", {"x": ONE, "shape": shape})
    # The last refused output is back in ONNX Runtime's arena, which gives it back on the
    # next run: at most that one output is kept meanwhile.
    assert grown < 2 * OUTPUT, f"the worker grew by {grown / MIB:.0f} MiB"
    reply, _ = worker.run("dynamic", small)
    assert reply["ok"]
    kept = _rss(worker.proc.pid) - before
    assert kept < OUTPUT // 4, f"the worker kept {kept / MIB:.0f} MiB after a small run"


def test_outputs_the_worker_refuses_once_written_out_are_let_go(
    worker: Harness, models: dict[str, str]
) -> None:
    """Strings: the runtime's bound counts only their lengths, so the worker itself refuses them
    once encoded, and the failed run's frames must not keep them."""
    assert worker.load("strings", models["strings"])["ok"]
    x = np.array([["s" * MIB]], dtype=object)  # 64 rows of 1 MiB
    grown = _refuse_repeatedly(worker, "strings", {"x": x, "shape": np.array([64, 1], np.int64)})
    assert grown < OUTPUT, f"the worker grew by {grown / MIB:.0f} MiB"
