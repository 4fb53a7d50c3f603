"""A worker serving several channels: its supervisor's and the ones handed over at run time (the
one serving loop, which serves a set of one channel alike: tests/workers/test_worker.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from channel import messages
from tests.support import onnx_models
from tests.support.ort import run_reference
from tests.support.waits import until
from tests.support.worker_harness import WAIT_S, Harness
from workers.worker import round_robin


@pytest.fixture
def mlp(tmp_path: Path) -> Path:
    return onnx_models.mlp(tmp_path / "mlp.onnx")


@pytest.fixture
def worker() -> Iterator[Harness]:
    harness = Harness(handover=True)
    try:
        yield harness
    finally:
        harness.close()


def _channel_maps(pid: int) -> int:
    """How many channel segments ``pid`` has mapped now."""
    text = Path(f"/proc/{pid}/maps").read_text()
    return sum(1 for line in text.splitlines() if "memfd:tensorgate-w0" in line)


def test_round_robin_takes_one_request_of_each_channel_in_turn() -> None:
    ready: Any = [("a", [b"a1", b"a2", b"a3"]), ("b", [b"b1"]), ("c", [b"c1", b"c2"])]
    assert round_robin(ready[1:2]) == [("b", b"b1")]
    assert round_robin(ready) == [
        ("a", b"a1"),
        ("b", b"b1"),
        ("c", b"c1"),
        ("a", b"a2"),
        ("c", b"c2"),
        ("a", b"a3"),
    ]


def test_runs_on_a_handed_over_channel_use_its_areas(worker: Harness, mlp: Path) -> None:
    assert worker.load("mlp:1", str(mlp))["ok"]
    front = worker.attach(owner=7)
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    reply, outputs = front.run("mlp:1", {"x": x})
    assert reply["ok"], reply
    expected = run_reference(mlp, {"x": x})
    np.testing.assert_array_equal(outputs["probs"], expected["probs"])
    reply, outputs = worker.run("mlp:1", {"x": x})  # the supervisor's channel serves on
    assert reply["ok"]
    np.testing.assert_array_equal(outputs["probs"], expected["probs"])


def test_every_channel_is_served_with_one_wait(worker: Harness, mlp: Path) -> None:
    """Runs queued on three channels while the worker is stopped are all answered once it
    runs again, each on its own channel."""
    assert worker.load("mlp:1", str(mlp))["ok"]
    fronts = [worker.attach(owner=n) for n in (1, 2)]
    until(lambda: _channel_maps(worker.proc.pid) == 3, "three channels mapped")
    os.kill(worker.proc.pid, signal.SIGSTOP)
    try:
        x = np.ones((1, 64), np.float32)
        sent = [(end, [end.put("x", x)]) for end in (worker, *fronts) for _ in range(3)]
        ids = [(end, inputs, end.send_run("mlp:1", inputs)) for end, inputs in sent]
    finally:
        os.kill(worker.proc.pid, signal.SIGCONT)
    for end, inputs, request_id in ids:
        reply = end.reply(request_id)
        assert reply["ok"], reply
        assert end.finish(inputs, reply)["probs"].shape == (1, 10)


def test_a_detached_channel_is_closed_and_the_others_serve_on(worker: Harness, mlp: Path) -> None:
    assert worker.load("mlp:1", str(mlp))["ok"]
    gone, stays = worker.attach(owner=1), worker.attach(owner=2)
    until(lambda: _channel_maps(worker.proc.pid) == 3, "three channels mapped")
    worker.detach(owner=1)
    until(lambda: _channel_maps(worker.proc.pid) == 2, "the detached channel unmapped")
    reply, outputs = stays.run("mlp:1", {"x": np.ones((2, 64), np.float32)})
    assert reply["ok"] and outputs["probs"].shape == (2, 10)
    assert worker.ping()["ok"]
    del gone


def test_stop_answers_what_waits_on_every_channel(worker: Harness, mlp: Path) -> None:
    assert worker.load("mlp:1", str(mlp))["ok"]
    front = worker.attach(owner=3)
    until(lambda: _channel_maps(worker.proc.pid) == 2, "two channels mapped")
    os.kill(worker.proc.pid, signal.SIGSTOP)
    try:
        stop = worker.send(messages.stop_request)
        inputs = [front.put("x", np.ones((1, 64), np.float32))]
        run = front.send_run("mlp:1", inputs)
    finally:
        os.kill(worker.proc.pid, signal.SIGCONT)
    assert worker.reply(stop)["ok"]
    reply = front.reply(run)  # taken in the same wait, after the stop: refused
    assert reply["code"] == "UNAVAILABLE", reply
    assert worker.proc.wait(WAIT_S) == 0
