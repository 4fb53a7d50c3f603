"""A request log prefix's files: names no earlier process owns, created new and never appended
to (a planted symlink, FIFO or file at a name is never opened), rotated whole, cut back to whole
records after a failed write, replaced when removed, and the prefix's total kept under its cap
with the oldest files removed first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

from gateway.observability.log_files import LogFiles
from gateway.tfserving.codec.tfrecord import frame_record, read_records


def _records(path: Path) -> list[bytes]:
    with path.open("rb") as stream:
        return list(read_records(stream))


def _tokens(*tokens: str) -> Iterator[str]:
    yield from tokens


def _draw(*tokens: str):
    found = _tokens(*tokens)
    return lambda: next(found)


def _ours(directory: Path, base: str = "log") -> list[Path]:
    return sorted(directory.glob(f"{base}-*.tfrecord"))


def test_names_carry_pid_and_a_random_token_and_files_rotate_whole(tmp_path: Path) -> None:
    record = frame_record(b"x" * 100)
    files = LogFiles(str(tmp_path / "log"), max_file_bytes=2 * len(record))
    for i in range(5):
        files.write(frame_record(bytes([i]) * 100))
    files.release()
    names = [p.name for p in _ours(tmp_path)]
    (token,) = {
        re.fullmatch(rf"log-{os.getpid()}-([0-9a-f]{{8}})-0000[0-2]\.tfrecord", n)[1]  # type: ignore[index]
        for n in names
    }
    assert names == [f"log-{os.getpid()}-{token}-{i:05d}.tfrecord" for i in range(3)]
    assert [len(_records(tmp_path / n)) for n in names] == [2, 2, 1]
    assert [r for n in names for r in _records(tmp_path / n)] == [
        bytes([i]) * 100 for i in range(5)
    ]


def test_a_leftover_file_or_symlink_at_an_earlier_process_name_is_left_alone(
    tmp_path: Path,
) -> None:
    """What an earlier process with this pid left (a container restarted), or what someone
    planted at that predictable name, is never opened: not appended to, not followed."""
    pid = os.getpid()
    leftover = tmp_path / f"log-{pid}-00000.tfrecord"
    leftover.write_bytes(b"an earlier process's partial rec")
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    (tmp_path / f"log-{pid}-00001.tfrecord").symlink_to(target)
    files = LogFiles(str(tmp_path / "log"), max_file_bytes=len(frame_record(b"r")))
    for _ in range(3):
        files.write(frame_record(b"r"))
    files.release()
    assert leftover.read_bytes() == b"an earlier process's partial rec"
    assert target.read_bytes() == b""
    written = [p for p in _ours(tmp_path) if not p.is_symlink() and p != leftover]
    assert [r for p in written for r in _records(p)] == [b"r"] * 3


def test_a_name_already_taken_draws_a_new_token_never_opening_what_is_there(
    tmp_path: Path,
) -> None:
    pid = os.getpid()
    target = tmp_path / "target"
    target.write_bytes(b"")
    (tmp_path / f"log-{pid}-aaaaaaaa-00000.tfrecord").symlink_to(target)
    os.mkfifo(tmp_path / f"log-{pid}-bbbbbbbb-00000.tfrecord")  # opening it would block
    (tmp_path / f"log-{pid}-cccccccc-00000.tfrecord").write_bytes(b"someone's")
    draw = _draw("aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd")
    files = LogFiles(str(tmp_path / "log"), max_file_bytes=1 << 20, draw=draw)
    files.write(frame_record(b"mine"))
    assert files.current == str(tmp_path / f"log-{pid}-dddddddd-00000.tfrecord")
    files.release()
    assert target.read_bytes() == b""
    assert (tmp_path / f"log-{pid}-cccccccc-00000.tfrecord").read_bytes() == b"someone's"
    assert _records(tmp_path / f"log-{pid}-dddddddd-00000.tfrecord") == [b"mine"]


def test_a_file_removed_while_written_is_replaced_by_a_new_one(tmp_path: Path) -> None:
    files = LogFiles(str(tmp_path / "log"), max_file_bytes=1 << 20)
    files.write(frame_record(b"first"))
    first = files.current
    assert first is not None
    os.unlink(first)
    files.write(frame_record(b"second"))
    assert files.current != first
    files.release()
    (path,) = _ours(tmp_path)
    assert _records(path) == [b"second"]


def test_the_cap_removes_the_oldest_files_of_the_prefix_first(tmp_path: Path) -> None:
    """Files of another process of the same prefix count and go first (they are older); other
    names, and links that match the pattern, are never removed."""
    record = frame_record(b"y" * 1000)
    size = len(record)
    older = tmp_path / "log-1-0123abcd-00000.tfrecord"
    older.write_bytes(record)
    os.utime(older, ns=(1, 1))
    unrelated = tmp_path / "other-1-0123abcd-00000.tfrecord"
    unrelated.write_bytes(record * 10)
    link = tmp_path / "log-2-0123abcd-00000.tfrecord"
    link.symlink_to(unrelated)
    files = LogFiles(str(tmp_path / "log"), max_file_bytes=size, max_total_bytes=3 * size)
    for i in range(10):
        files.write(frame_record(bytes([i]) * 1000))
        os.utime(files.current or "", ns=(10 + i, 10 + i))  # distinct ages, in order
    files.release()
    assert files.removed == 8  # the other process's file, then this one's oldest
    assert not older.exists()
    assert unrelated.stat().st_size == 10 * size and link.is_symlink()
    kept = [p for p in _ours(tmp_path) if not p.is_symlink()]
    assert sum(p.stat().st_size for p in kept) <= 3 * size
    assert [r for p in kept for r in _records(p)] == [bytes([i]) * 1000 for i in (7, 8, 9)]


def test_a_write_that_fails_leaves_the_file_with_its_whole_records_only(tmp_path: Path) -> None:
    """A real failed write: the file size limit (RLIMIT_FSIZE) cuts the third record short, in
    a process of its own. The file keeps the two whole records; the next one starts a file."""
    prefix = tmp_path / "log"
    script = textwrap.dedent(
        f"""
        import resource, signal
        from gateway.observability.log_files import LogFiles
        from gateway.tfserving.codec.tfrecord import frame_record
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        record = frame_record(b"z" * 1000)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2 * len(record) + 500, resource.RLIM_INFINITY))
        files = LogFiles({str(prefix)!r}, max_file_bytes=1 << 20)
        files.write(record)
        files.write(record)
        try:
            files.write(record)
        except OSError as exc:
            print("failed", exc.errno)
        assert files.current is None
        files.release()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("failed")
    (path,) = _ours(tmp_path)
    assert _records(path) == [b"z" * 1000] * 2
    assert path.stat().st_size == 2 * len(frame_record(b"z" * 1000))


def test_a_directory_recreated_after_a_failure_is_found_again(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    files = LogFiles(str(logs / "log"), max_file_bytes=len(frame_record(b"a")))
    files.write(frame_record(b"a"))
    for path in logs.iterdir():
        path.unlink()
    logs.rmdir()
    try:
        files.write(frame_record(b"lost"))
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("a file was created in a removed directory")
    logs.mkdir()
    files.write(frame_record(b"b"))
    files.release()
    (path,) = _ours(logs)
    assert _records(path) == [b"b"]
