"""Server timing: what a call's batch leaves on its record, and the value written from it."""

from __future__ import annotations

import re

import numpy as np

from gateway.observability import server_timing
from gateway.observability.batches import BatchNote, QueueLabels, QueueObserver
from gateway.observability.call_record import Call
from gateway.observability.calls import Recorder
from gateway.worker_channel.lease import RunResult

LABELS = QueueLabels("m", "1", "ONNX", 1, None)


def _call() -> Call:
    return Call("tfserving", "Predict", "GRPC", 0.0)


def _run(compute_us: float) -> RunResult:
    return RunResult({"y": np.zeros((3, 1), np.float32)}, compute_us)


def test_a_timed_queue_gives_each_member_its_wait_its_own_rows_and_the_compute() -> None:
    """A member learns its own rows, never the batch's total (other callers' traffic)."""
    observer = QueueObserver(LABELS, None, None, None, timed=True)
    first, second = _call(), _call()
    note = observer.on_batch([first, second, None], [0.004, 0.001, 0.0], [2, 1, 1], 4)
    assert isinstance(note, BatchNote)
    note.done(_run(1500.0))
    assert (first.queue_s, first.batch_rows, first.compute_s) == (0.004, 2, 0.0015)
    assert (second.queue_s, second.batch_rows, second.compute_s) == (0.001, 1, 0.0015)


def test_an_untimed_queue_without_other_outputs_keeps_no_note() -> None:
    observer = QueueObserver(LABELS, None, None, None)
    call = _call()
    assert observer.on_batch([call], [0.004], [1], 1) is None
    assert call.queue_s is None


def test_a_failed_run_leaves_the_call_with_its_total_alone() -> None:
    observer = QueueObserver(LABELS, None, None, None, timed=True)
    call = _call()
    note = observer.on_batch([call], [0.004], [1], 1)
    assert note is not None
    note.done(None)
    assert re.fullmatch(r"total;dur=\d+\.\d{3}", server_timing.value(call))


def test_the_value_is_w3c_server_timing_in_milliseconds() -> None:
    call = _call()
    server_timing.note_batch(call, 0.0012345, 8, 0.25)
    value = server_timing.value(call)
    assert re.fullmatch(
        r'queue;dur=1\.234, rows;desc="8", compute;dur=250\.000, total;dur=\d+\.\d{3}', value
    ), value


def test_a_request_split_over_batches_reports_its_longest_wait_and_compute_and_all_rows() -> None:
    call = _call()
    server_timing.note_batch(call, 0.002, 100, 0.010)
    server_timing.note_batch(call, 0.005, 30, 0.004)
    assert (call.queue_s, call.batch_rows, call.compute_s) == (0.005, 130, 0.010)


def test_timing_alone_opens_every_call() -> None:
    assert Recorder(None, None, None, timing=True).needs_parent is False
