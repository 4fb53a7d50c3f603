"""The request log's writer: whole records in order; a queue bounded in records and, with every
writer of the process, in bytes, refusing at once; a failing file system logged once per outage,
paused and then retried, its records dropped and counted; a stuck writer never holding more than
its bytes, and abandoned at shutdown with its records counted."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from gateway.observability.log_files import LogFiles
from gateway.observability.log_writer import FIRST_PAUSE_S, LogWriter, PendingBytes
from gateway.tfserving.codec.tfrecord import frame_record, read_records


def _records(directory: Path, base: str = "log") -> list[bytes]:
    out = []
    for path in sorted(directory.glob(f"{base}-*.tfrecord")):
        with path.open("rb") as stream:
            out += list(read_records(stream))
    return out


def _job(data: bytes):
    return lambda: frame_record(data)


def _writer(prefix: Path, *, max_pending: int = 8, budget: int = 1 << 20, **kw) -> LogWriter:
    files = LogFiles(str(prefix), max_file_bytes=1 << 20)
    return LogWriter(files, max_pending=max_pending, budget=PendingBytes(budget), **kw)


class _Held:
    """A job that blocks the writer's thread until released (it is then written)."""

    def __init__(self, data: bytes = b"held") -> None:
        self.taken, self.release, self.data = threading.Event(), threading.Event(), data

    def __call__(self) -> bytes:
        self.taken.set()
        assert self.release.wait(60)
        return frame_record(self.data)


def test_records_are_written_whole_and_in_order(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "log")
    for i in range(5):
        assert writer.put(_job(bytes([i]) * 100), 100)
    assert writer.close(60)
    assert _records(tmp_path) == [bytes([i]) * 100 for i in range(5)]
    assert (writer.written, writer.lost, writer.failed) == (5, 0, 0)


def test_a_full_queue_refuses_at_once_and_what_was_queued_is_written(tmp_path: Path) -> None:
    held = _Held(b"first")
    writer = _writer(tmp_path / "log", max_pending=2)
    assert writer.put(held, 1)
    assert held.taken.wait(60)  # the writer holds the first job: the queue is empty
    assert writer.put(_job(b"second"), 1) and writer.put(_job(b"third"), 1)
    assert not writer.put(_job(b"dropped"), 1)
    held.release.set()
    assert writer.close(60)
    assert _records(tmp_path) == [b"first", b"second", b"third"]


def test_the_bytes_queued_by_every_writer_of_a_process_are_bounded(tmp_path: Path) -> None:
    """Two prefixes share one byte budget; a job holds its bytes until its record is written."""
    budget = PendingBytes(1000)
    writers = [
        LogWriter(
            LogFiles(str(tmp_path / n), max_file_bytes=1 << 20), max_pending=100, budget=budget
        )
        for n in ("a", "b")
    ]
    held = [_Held(b"a"), _Held(b"b")]
    assert writers[0].put(held[0], 400) and writers[1].put(held[1], 400)
    assert held[0].taken.wait(60) and held[1].taken.wait(60)
    assert writers[0].put(_job(b"a2"), 200)
    assert budget.held_bytes == 1000
    assert not writers[0].put(_job(b"over"), 1) and not writers[1].put(_job(b"over"), 1)
    for job in held:
        job.release.set()
    assert all(w.close(60) for w in writers)
    assert budget.held_bytes == 0
    assert _records(tmp_path, "a") == [b"a", b"a2"] and _records(tmp_path, "b") == [b"b"]


def test_a_job_that_raises_is_counted_and_the_others_are_written(tmp_path: Path) -> None:
    def broken() -> bytes:
        raise ValueError("no record")

    writer = _writer(tmp_path / "log")
    for job in (_job(b"a"), broken, _job(b"b")):
        assert writer.put(job, 1)
    assert writer.close(60)
    assert _records(tmp_path) == [b"a", b"b"] and writer.failed == 1


class _Clock:
    """Monotonic seconds set by the test; says when the writer has read it ``n`` times (once
    per record it handles)."""

    def __init__(self, reads: int) -> None:
        self.now = 0.0
        self._reads = 0
        self._wanted = reads
        self._reached = threading.Event()

    def __call__(self) -> float:
        self._reads += 1
        if self._reads >= self._wanted:
            self._reached.set()
        return self.now

    def wait_reads(self) -> bool:
        """Wait (bounded) until the clock was read the number of times given at creation."""
        return self._reached.wait(60)


def test_an_outage_is_logged_once_paused_and_its_records_dropped_unbuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The directory disappears: the first record fails (one error line), the writer pauses and
    drops what arrives meanwhile without building it; after the pause, with the directory back,
    the next record is written and one line says how many were lost."""
    logs = tmp_path / "logs"
    logs.mkdir()
    clock = _Clock(reads=20)
    built: list[bytes] = []

    def job(data: bytes):
        def build() -> bytes:
            built.append(data)
            return frame_record(data)

        return build

    writer = _writer(logs / "log", max_pending=100, clock=clock)
    logs.rmdir()
    caplog.set_level(logging.WARNING, logger="gateway.observability.log_writer")
    for i in range(20):
        assert writer.put(job(b"lost%d" % i), 1)
    assert clock.wait_reads()  # the writer is handling the last of them
    logs.mkdir()
    clock.now = FIRST_PAUSE_S + 0.5
    assert writer.put(job(b"back"), 1)
    assert writer.close(60)
    assert built == [b"lost0", b"back"]  # the others were dropped unbuilt, during the pause
    assert _records(logs) == [b"back"]
    assert (writer.written, writer.lost) == (1, 20)
    lines = [r.getMessage() for r in caplog.records]
    assert len([m for m in lines if "could not be written" in m]) == 1, lines
    assert [m for m in lines if "writing again" in m] == [
        f"request log {logs / 'log'}: writing again; 20 record(s) were dropped meanwhile"
    ]


def test_a_stuck_writer_holds_its_bytes_only_and_is_abandoned_at_shutdown(tmp_path: Path) -> None:
    held = _Held()
    budget = PendingBytes(100)
    writer = LogWriter(
        LogFiles(str(tmp_path / "log"), max_file_bytes=1 << 20), max_pending=1000, budget=budget
    )
    assert writer.put(held, 10)
    assert held.taken.wait(60)
    accepted = sum(writer.put(_job(b"q"), 10) for _ in range(50))
    assert accepted == 9 and budget.held_bytes == 100  # the rest were refused at once
    assert not writer.close(0.05)  # bounded: the thread is stuck in its job
    assert writer.abandon() == 10  # the nine queued and the one in hand
    assert budget.held_bytes == 10  # the job in hand still holds its bytes
    assert not writer.put(_job(b"late"), 1)
    held.release.set()
    assert writer.close(60)  # once unstuck, it writes what it held and ends
    assert writer.ended and _records(tmp_path) == [b"held"]


def test_a_job_larger_than_the_budget_is_taken_alone() -> None:
    budget = PendingBytes(100)
    assert budget.take(500)  # nothing else held: a call bigger than the budget is still logged
    assert not budget.take(1)
    budget.give(500)
    assert budget.take(60) and not budget.take(500) and budget.take(40)
