"""The request log's writer: whole records in order, rotation, a full queue refusing at once, and
a failed record never leaving a partial one before the next."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path
from typing import BinaryIO

from gateway.observability.log_writer import LogWriter
from gateway.tfserving.codec.tfrecord import frame, read_records


def _records(path: Path) -> list[bytes]:
    with path.open("rb") as stream:
        return list(read_records(stream))


def _job(data: bytes):  # type: ignore[no-untyped-def]
    return lambda: frame(data)


def test_records_are_written_whole_in_order_and_rotated_by_size(tmp_path: Path) -> None:
    prefix = str(tmp_path / "log")
    record = len(frame(b"x" * 100))
    writer = LogWriter(prefix, max_pending=8, max_file_bytes=2 * record)
    for i in range(5):
        assert writer.put(_job(bytes([i]) * 100))
    writer.close()
    pid = os.getpid()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"log-{pid}-{i:05d}.tfrecord" for i in range(3)]
    found = [r for name in names for r in _records(tmp_path / name)]
    assert found == [bytes([i]) * 100 for i in range(5)]
    assert [len(_records(tmp_path / n)) for n in names] == [2, 2, 1]
    assert writer.written == 5 and writer.failed == 0


def test_a_full_queue_refuses_at_once_and_what_was_queued_is_written(tmp_path: Path) -> None:
    taken, release = threading.Event(), threading.Event()

    def slow() -> bytes:
        taken.set()
        release.wait(30)
        return frame(b"first")

    writer = LogWriter(str(tmp_path / "log"), max_pending=2, max_file_bytes=1 << 20)
    assert writer.put(slow)
    assert taken.wait(30)  # the writer holds the first job: the queue is empty
    assert writer.put(_job(b"second")) and writer.put(_job(b"third"))
    assert not writer.put(_job(b"dropped"))
    release.set()
    writer.close()
    (path,) = tmp_path.iterdir()
    assert _records(path) == [b"first", b"second", b"third"]


def test_a_job_that_raises_is_counted_and_the_others_are_written(tmp_path: Path) -> None:
    def broken() -> bytes:
        raise ValueError("no record")

    writer = LogWriter(str(tmp_path / "log"), max_pending=4, max_file_bytes=1 << 20)
    for job in (_job(b"a"), broken, _job(b"b")):
        assert writer.put(job)
    writer.close()
    (path,) = tmp_path.iterdir()
    assert _records(path) == [b"a", b"b"] and writer.failed == 1


class _FailsOnce(io.BytesIO):
    failures = 1

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if _FailsOnce.failures:
            _FailsOnce.failures -= 1
            super().write(data[:5])  # a partial record, then the error
            raise OSError(28, "No space left on device")
        return super().write(data)

    def close(self) -> None:
        self.flush()


def test_after_a_failed_write_the_next_record_starts_a_new_file(tmp_path: Path) -> None:
    opened: dict[str, io.BytesIO] = {}

    def opener(path: str) -> BinaryIO:
        opened[path] = file = _FailsOnce()
        return file

    writer = LogWriter(str(tmp_path / "log"), max_pending=4, max_file_bytes=1 << 20, opener=opener)
    assert writer.put(_job(b"lost")) and writer.put(_job(b"kept"))
    writer.close()
    first, second = opened.values()
    assert len(first.getvalue()) == 5  # the partial record is left alone in its own file
    assert list(read_records(io.BytesIO(second.getvalue()))) == [b"kept"]
    assert writer.written == 1 and writer.failed == 1
