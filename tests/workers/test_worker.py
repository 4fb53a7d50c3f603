"""Real worker processes over a real channel, checked against ONNX Runtime in this process."""

from __future__ import annotations

import functools
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from channel import messages
from channel.dtypes import dtype_name
from channel.messages import TensorDesc
from tests.support.worker_harness import WAIT_S, Harness

# -- models -------------------------------------------------------------------------------------


def _save(path: Path, nodes: list[Any], inputs: list[Any], outputs: list[Any], **kw: Any) -> str:
    check = kw.pop("check", True)
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, **kw)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if check:  # the checker wants every graph input and output to have a shape
        onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def _affine(path: Path) -> str:
    """x float32[-1, 4] → y = x @ W + b  [-1, 3], twice = x + x  [-1, 4]."""
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    return _save(
        path,
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["y"]),
            helper.make_node("Add", ["x", "x"], ["twice"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("twice", TensorProto.FLOAT, ["batch", 4]),
        ],
        initializer=[w, b],
    )


def _unary(path: Path, op: str, elem: int, *extra: str, **kw: Any) -> str:
    """x elem[-1, -1] → y = op(x, *extra)."""
    return _save(
        path,
        [helper.make_node(op, ["x", *extra], ["y"])],
        [helper.make_tensor_value_info("x", elem, ["n", "m"])],
        [helper.make_tensor_value_info("y", elem, ["n", "m"])],
        **kw,
    )


def _mixed(path: Path) -> str:
    """x float32 of any rank → y = x (unknown rank), seq = [x] (a sequence, not a tensor)."""
    return _save(
        path,
        [
            helper.make_node("Identity", ["x"], ["y"]),
            helper.make_node("SequenceConstruct", ["x"], ["seq"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None),
        ],
        check=False,
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("worker_models")
    three = numpy_helper.from_array(np.array(3, dtype=np.int64), "three")
    return {
        "affine": _affine(root / "affine.onnx"),
        "strings": _unary(root / "strings.onnx", "Identity", TensorProto.STRING),
        "half": _unary(root / "half.onnx", "Add", TensorProto.FLOAT16, "x"),
        "ints": _unary(root / "ints.onnx", "Mul", TensorProto.INT64, "three", initializer=[three]),
        "bf16": _unary(root / "bf16.onnx", "Identity", TensorProto.BFLOAT16),
        "mixed": _mixed(root / "mixed.onnx"),
    }


def _reference(path: str, feeds: dict[str, np.ndarray[Any, Any]]) -> list[np.ndarray[Any, Any]]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


@pytest.fixture(scope="module")
def worker(models: dict[str, str]) -> Iterator[Harness]:
    """One worker shared by tests that leave it serving; every model loaded."""
    harness = Harness()
    try:
        for key, path in models.items():
            assert harness.load(key, path)["ok"]
        yield harness
    finally:
        harness.close()


# -- serving ------------------------------------------------------------------------------------


def test_ready_then_ping_names_the_process(worker: Harness) -> None:
    assert worker.ready == {"id": 0, "ok": True, "op": "ready", "pid": worker.proc.pid}
    request_id = worker.send(messages.ping_request)
    reply = worker.reply(request_id)
    assert {k: reply[k] for k in ("id", "ok", "pid")} == {
        "id": request_id,
        "ok": True,
        "pid": worker.proc.pid,
    }
    assert reply["stats"]["pid"] == worker.proc.pid


def test_ping_with_a_key_counts_its_runs_since_it_was_loaded(
    fresh: Harness, models: dict[str, str]
) -> None:
    assert fresh.load("counted", models["affine"])["ok"]
    x = np.ones((1, 4), dtype=np.float32)
    for _ in range(3):
        assert fresh.run("counted", {"x": x})[0]["ok"]
    assert not fresh.run("counted", {"x": np.ones((1, 5), np.float32)})[0]["ok"]  # seen too
    ping = functools.partial(messages.ping_request, key="counted")
    assert fresh.call(ping)["runs"] == 4
    assert fresh.load("counted", models["affine"])["ok"]  # same path: kept, count kept
    assert fresh.call(ping)["runs"] == 4
    fresh.unload("counted")
    assert fresh.call(ping)["runs"] == 0
    assert "runs" not in fresh.ping()


def test_load_reports_the_signature(worker: Harness, models: dict[str, str]) -> None:
    reply = worker.load("affine-again", models["affine"])
    assert reply["ok"]
    assert reply["signature"] == {
        "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 4]}],
        "outputs": [
            {"name": "y", "dtype": "float32", "shape": [-1, 3]},
            {"name": "twice", "dtype": "float32", "shape": [-1, 4]},
        ],
    }
    assert worker.unload("affine-again") == {"id": reply["id"] + 1, "ok": True}


def test_unknown_ranks_and_non_tensor_outputs(worker: Harness, models: dict[str, str]) -> None:
    reply = worker.load("mixed-again", models["mixed"])
    assert reply["signature"] == {
        "inputs": [{"name": "x", "dtype": "float32", "shape": None}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": None}],  # no "seq"
    }
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    reply, outputs = worker.run("mixed", {"x": x})
    assert reply["ok"], reply
    assert list(outputs) == ["y"]
    np.testing.assert_array_equal(outputs["y"], x)


def test_float32_outputs_match_onnxruntime_exactly(worker: Harness, models: dict[str, str]) -> None:
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    reply, outputs = worker.run("affine", {"x": x})
    assert reply["ok"], reply
    y, twice = _reference(models["affine"], {"x": x})
    assert [t.name for t in reply["outputs"]] == ["y", "twice"]
    assert reply["outputs"][0].dtype == "float32" and reply["outputs"][0].shape == (5, 3)
    np.testing.assert_array_equal(outputs["y"], y)
    np.testing.assert_array_equal(outputs["twice"], twice)
    assert reply["compute_us"] > 0
    assert reply["out_end"] >= y.nbytes + twice.nbytes


def test_output_filter_returns_only_the_named_outputs(worker: Harness) -> None:
    x = np.ones((2, 4), dtype=np.float32)
    reply, outputs = worker.run("affine", {"x": x}, outputs=["twice"])
    assert reply["ok"], reply
    assert list(outputs) == ["twice"]
    np.testing.assert_array_equal(outputs["twice"], 2 * x)
    reply, _ = worker.run("affine", {"x": x}, outputs=["nope"])
    assert reply["code"] == "INVALID_ARGUMENT"
    assert "'nope' is not in the signature" in reply["message"]


@pytest.mark.parametrize(
    ("key", "x"),
    [
        ("half", np.array([[0.5, -2.25, 65504]], dtype=np.float16)),
        ("ints", np.array([[1, -2], [2**40, 0]], dtype=np.int64)),
        ("bf16", np.array([[1.5, -3.0, 1e30]], dtype=np.float32).astype(ml_dtypes.bfloat16)),
    ],
)
def test_other_dtypes_match_onnxruntime(
    worker: Harness, models: dict[str, str], key: str, x: np.ndarray[Any, Any]
) -> None:
    reply, outputs = worker.run(key, {"x": x})
    assert reply["ok"], reply
    assert reply["outputs"][0].dtype == dtype_name(x.dtype)
    if key == "bf16":
        np.testing.assert_array_equal(outputs["y"], x)  # in-process ORT cannot feed bfloat16
    else:
        np.testing.assert_array_equal(outputs["y"], _reference(models[key], {"x": x})[0])


def test_strings_round_trip_as_utf8(worker: Harness) -> None:
    x = np.array([["héllo", ""], ["wörld", "x" * 1000]], dtype=object)
    reply, outputs = worker.run("strings", {"x": x})
    assert reply["ok"], reply
    assert reply["outputs"][0].dtype == "string"
    assert outputs["y"].tolist() == [[s.encode() for s in row] for row in x.tolist()]


def test_undecodable_string_input_is_invalid_and_the_worker_keeps_serving(
    worker: Harness,
) -> None:
    reply, _ = worker.run("strings", {"x": np.array([[b"\xff\xfe"]], dtype=object)})
    assert reply["ok"] is False and reply["code"] == "INVALID_ARGUMENT"
    assert "'x' is not valid UTF-8" in reply["message"]
    assert worker.ping()["ok"]


def test_bad_input_shape_gets_onnxruntimes_message_and_the_worker_keeps_serving(
    worker: Harness,
) -> None:
    reply, _ = worker.run("affine", {"x": np.zeros((2, 5), dtype=np.float32)})
    assert reply["ok"] is False and reply["code"] == "INVALID_ARGUMENT"
    assert "Got invalid dimensions for input: x" in reply["message"]
    good, outputs = worker.run("affine", {"x": np.ones((1, 4), dtype=np.float32)})
    assert good["ok"] and outputs["twice"].tolist() == [[2.0] * 4]


def test_expired_deadline_is_not_run(worker: Harness) -> None:
    reply, _ = worker.run("affine", {"x": np.ones((1, 4), np.float32)}, deadline=time.monotonic())
    assert reply == {
        "id": reply["id"],
        "ok": False,
        "code": "DEADLINE_EXCEEDED",
        "message": "deadline exceeded before the batch ran",
        "out_end": reply["out_end"],
    }
    later = time.monotonic() + 3600
    assert worker.run("affine", {"x": np.ones((1, 4), np.float32)}, deadline=later)[0]["ok"]


_LOAD: dict[str, Any] = {"key": "k", "path": "/x", "platform": "onnx", "intra_op": 1, "inter_op": 1}


@pytest.mark.parametrize(
    ("make", "code", "text"),
    [
        (
            functools.partial(messages.run_request, key="nope", inputs=[]),
            "NOT_FOUND",
            "model 'nope' is not loaded",
        ),
        (
            functools.partial(messages.load_request, **{**_LOAD, "path": "/no/such/model.onnx"}),
            "NOT_FOUND",
            "does not exist",
        ),
        (
            functools.partial(messages.load_request, **{**_LOAD, "platform": "tf"}),
            "UNIMPLEMENTED",
            "platform 'tf' is not served",
        ),
        (
            functools.partial(messages.load_request, **{**_LOAD, "intra_op": 0}),
            "INVALID_ARGUMENT",
            "intra_op and inter_op must be >= 1",
        ),
        (
            functools.partial(
                messages.run_request,
                key="affine",
                inputs=[TensorDesc("x", "float32", (1,), 1 << 30, 4)],
            ),
            "INVALID_ARGUMENT",
            "input tensor 'x': block [1073741824, 1073741828) lies outside an area",
        ),
    ],
)
def test_bad_requests_get_an_error_reply(
    worker: Harness, make: Callable[[int], messages.Request], code: str, text: str
) -> None:
    reply = worker.call(make)
    assert reply["ok"] is False and reply["code"] == code, reply
    assert text in reply["message"]


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"op": "load", "key": "k"}, "load request: 'path' must be a string"),
        ({"op": "frobnicate"}, "unknown op 'frobnicate'"),
        (
            {"op": "run", "key": "affine", "inputs": [], "outputs": None, "signature": ""},
            "a run request travels in the binary layout, not as JSON",
        ),
    ],
)
def test_malformed_requests_are_invalid_and_the_worker_keeps_serving(
    worker: Harness, fields: dict[str, Any], text: str
) -> None:
    reply = worker.reply(worker.send_raw(fields))
    assert reply["ok"] is False and reply["code"] == "INVALID_ARGUMENT", reply
    assert text in reply["message"]
    assert worker.ping()["ok"]


def test_undecodable_bytes_get_a_reply_without_an_id(fresh: Harness) -> None:
    fresh.channel.submit(b"\xff not json")
    assert fresh.reply(-1) == {
        "id": -1,
        "ok": False,
        "code": "INVALID_ARGUMENT",
        "message": "request is not JSON",
    }
    assert fresh.ping()["ok"]


def test_unloadable_file_is_invalid(worker: Harness, tmp_path: Path) -> None:
    garbage = tmp_path / "model.onnx"
    garbage.write_bytes(b"not a model")
    reply = worker.load("garbage", str(garbage))
    assert reply["code"] == "INVALID_ARGUMENT" and "cannot load ONNX model" in reply["message"]


def test_unloaded_model_is_not_found(worker: Harness, models: dict[str, str]) -> None:
    assert worker.load("temp", models["ints"])["ok"]
    assert worker.unload("temp")["ok"]
    reply, _ = worker.run("temp", {"x": np.ones((1, 1), np.int64)})
    assert reply["code"] == "NOT_FOUND"


def test_many_batches_wrap_the_rings_and_areas(fresh: Harness, models: dict[str, str]) -> None:
    assert fresh.load("affine", models["affine"])["ok"]
    rng = np.random.default_rng(3)
    pending: list[tuple[int, list[TensorDesc], np.ndarray[Any, Any]]] = []
    for i in range(300):
        x = rng.standard_normal((int(rng.integers(1, 200)), 4)).astype(np.float32)
        inputs = [fresh.put("x", x)]
        pending.append((fresh.send_run("affine", inputs), inputs, x))
        if len(pending) == 6 or i == 299:  # several in flight; replies consumed in order
            for request_id, inputs, x in pending:
                reply = fresh.reply(request_id)
                assert reply["ok"], reply
                outputs = fresh.finish(inputs, reply)
                np.testing.assert_array_equal(outputs["twice"], x + x)
            pending.clear()
    assert fresh.channel.input_used == 0 and fresh.channel.output_used == 0
    assert fresh.channel.output_capacity * 5 < reply["out_end"]  # wrapped several times


def test_outputs_bigger_than_the_area_are_resource_exhausted(
    fresh: Harness, models: dict[str, str]
) -> None:
    assert fresh.load("affine", models["affine"])["ok"]
    x = np.zeros((3000, 4), dtype=np.float32)  # 48 KB in; 84 KB of outputs > 64 KiB
    reply, _ = fresh.run("affine", {"x": x})
    assert reply["code"] == "RESOURCE_EXHAUSTED"
    message = "outputs of 84032 bytes exceed the worker's output arena of 65536 bytes"
    assert message in reply["message"]
    assert fresh.ping()["ok"]


# -- lifecycle ---------------------------------------------------------------------------------


def test_stop_replies_refuses_what_follows_and_exits_zero(fresh: Harness) -> None:
    fresh.proc.send_signal(signal.SIGSTOP)  # so that it takes both descriptors in one go
    stop = fresh.send(messages.stop_request)
    after = fresh.send(messages.ping_request)
    fresh.proc.send_signal(signal.SIGCONT)
    assert fresh.reply(stop) == {"id": stop, "ok": True}
    late = fresh.reply(after)
    assert late["code"] == "UNAVAILABLE" and late["message"] == "worker is shutting down"
    assert fresh.proc.wait(WAIT_S) == 0


def test_sigterm_answers_what_was_sent_and_exits_zero(
    fresh: Harness, models: dict[str, str]
) -> None:
    assert fresh.load("affine", models["affine"])["ok"]
    inputs = [fresh.put("x", np.ones((4, 4), np.float32))]
    request_id = fresh.send_run("affine", inputs)
    fresh.proc.send_signal(signal.SIGTERM)
    reply = fresh.reply(request_id)
    assert reply["ok"] or reply["code"] == "UNAVAILABLE", reply
    assert fresh.proc.wait(WAIT_S) == 0


def test_killed_worker_is_noticed_through_a_pidfd(fresh: Harness) -> None:
    pidfd = os.pidfd_open(fresh.proc.pid)  # what an event loop can watch with add_reader
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        assert poller.poll(0) == []
        fresh.proc.kill()
        assert poller.poll(int(WAIT_S * 1000)) == [(pidfd, select.POLLIN)]
    finally:
        os.close(pidfd)
    assert fresh.proc.wait(WAIT_S) == -signal.SIGKILL
    with pytest.raises(AssertionError, match="worker rc=-9"):
        fresh.ping()
    assert fresh.channel.completions() == []


def test_worker_never_imports_grpc_or_protobuf(worker: Harness) -> None:
    code = (
        "import sys, workers.__main__, workers.bootstrap, workers.worker, workers.backends.onnx\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('grpc', 'gateway', 'tensorflow')\n"
        "       or m.startswith('google.protobuf') or m.startswith('google._upb')]\n"
        "sys.exit(f'imported: {bad}' if bad else 0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=WAIT_S)
    # And the live worker, after loading and running models, has no such native module mapped.
    assert worker.run("affine", {"x": np.ones((1, 4), np.float32)})[0]["ok"]
    maps = Path(f"/proc/{worker.proc.pid}/maps").read_text()
    for fragment in ("/grpc/", "/google/_upb/", "/google/protobuf/"):
        assert fragment not in maps
