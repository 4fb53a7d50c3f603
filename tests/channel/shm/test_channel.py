"""The shared-memory channel, both ends in this process (the worker end on duplicated fds)."""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from channel.shm.channel import Channel, ChannelFull, OutputArenaExhausted
from channel.shm.payload import read_tensor, write_tensor

WAIT_S = 30.0
"""Upper bound of every wait on the other thread (never reached when things work)."""


def _worker_end(gateway: Channel) -> Channel:
    """A second end in this process, on duplicates of the descriptors a child inherits."""
    memfd, submit_fd, complete_fd, release_fd = (os.dup(fd) for fd in gateway.fds)
    return Channel(
        index=gateway.index,
        memfd=memfd,
        submit_fd=submit_fd,
        complete_fd=complete_fd,
        release_fd=release_fd,
    )


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


@pytest.fixture
def pair() -> Iterator[tuple[Channel, Channel]]:
    gateway = Channel.create(
        index=3, input_bytes=1 << 16, output_bytes=1 << 14, ring_slots=4, slot_bytes=256
    )
    worker = _worker_end(gateway)
    yield gateway, worker
    worker.close()
    gateway.close()


def test_messages_arrive_in_order_both_ways(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    sent = [b'{"op":"ping","id":1}', "héllo".encode(), b""]
    for message in sent:
        gateway.submit(message)
    assert worker.wait_submissions(0) == sent
    assert worker.wait_submissions(0) == []
    worker.post_completion(b"reply")
    assert gateway.completions() == [b"reply"]
    assert gateway.completions() == []


def test_rings_wrap_around_under_bursts(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    next_id = 0
    for burst in [1, 3, 4, 2, 4, 1] * 10:
        sent = [str(i).encode() for i in range(next_id, next_id + burst)]
        next_id += burst
        for message in sent:
            gateway.submit(message)
        got = worker.wait_submissions(WAIT_S)
        assert got == sent
        for message in got:
            worker.post_completion(message)
        assert gateway.completions() == sent


def test_full_ring_raises_until_a_slot_is_consumed(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    for i in range(4):
        gateway.submit(bytes([i]))
    with pytest.raises(ChannelFull):
        gateway.submit(b"\x04")
    assert worker.wait_submissions(0) == [b"\x00", b"\x01", b"\x02", b"\x03"]
    gateway.submit(b"\x04")
    assert worker.wait_submissions(0) == [b"\x04"]


def test_oversized_message_is_refused_and_leaves_the_ring_intact(
    pair: tuple[Channel, Channel],
) -> None:
    gateway, worker = pair
    with pytest.raises(ValueError, match="exceeds the ring slot of 252 bytes"):
        gateway.submit(b"x" * 253)
    with pytest.raises(ValueError, match="exceeds the ring slot"):
        worker.post_completion(b"y" * 300)
    gateway.submit(b"x" * 252)
    assert worker.wait_submissions(0) == [b"x" * 252]
    assert gateway.completions() == []


def test_wait_returns_empty_on_timeout_or_wakeup(pair: tuple[Channel, Channel]) -> None:
    _, worker = pair
    assert worker.wait_submissions(0) == []
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK)
    try:
        os.write(wake_w, b"\x0f")
        assert worker.wait_submissions(None, wake_fd=wake_r) == []
        with pytest.raises(BlockingIOError):
            os.read(wake_r, 1)  # drained
    finally:
        os.close(wake_r)
        os.close(wake_w)


def test_input_blocks_are_shared_without_copies(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    offset = gateway.alloc_input(x.nbytes)
    assert offset is not None and offset % 64 == 0
    write_tensor(gateway.input_view(offset, x.nbytes), x)
    seen = read_tensor(worker.input_view(offset, x.nbytes), "float32", [3, 4])
    np.testing.assert_array_equal(seen, x)
    gateway.input_view(offset, 4)[:4] = np.float32(-1).tobytes()
    assert seen[0, 0] == -1  # the worker's array is a view of the same memory
    assert gateway.input_used == 64
    del seen
    gateway.free_input(offset)
    assert gateway.input_used == 0
    assert gateway.alloc_input(gateway.input_capacity + 1) is None


def test_views_outside_an_area_are_refused(pair: tuple[Channel, Channel]) -> None:
    gateway, _ = pair
    with pytest.raises(ValueError, match="outside an area"):
        gateway.input_view(gateway.input_capacity - 8, 16)
    with pytest.raises(ValueError, match="outside an area"):
        gateway.output_view(-1, 4)


# -- output space and its doorbell --------------------------------------------------------------


def test_output_space_comes_back_when_the_gateway_releases_it(
    pair: tuple[Channel, Channel],
) -> None:
    gateway, worker = pair
    capacity = worker.output_capacity
    assert capacity == 1 << 14
    first = worker.alloc_output(capacity // 2)
    second = worker.alloc_output(capacity // 2)
    assert (first, second) == (0, capacity // 2)
    assert gateway.output_used == capacity
    with pytest.raises(
        OutputArenaExhausted,
        match=r"no room for outputs of 64 bytes .* after 0 s: earlier outputs were not released",
    ):
        worker.alloc_output(64, timeout=0)
    gateway.release_outputs(capacity // 2)
    gateway.release_outputs(capacity // 4)  # older than what was released: no effect
    assert gateway.output_used == capacity // 2
    assert worker.alloc_output(64, timeout=0) == 0
    assert worker.output_allocated == capacity + 64


def test_outputs_larger_than_the_area_fail_at_once(pair: tuple[Channel, Channel]) -> None:
    _, worker = pair
    with pytest.raises(
        OutputArenaExhausted,
        match="outputs of 16385 bytes exceed the worker's output arena of 16384 bytes",
    ):
        worker.alloc_output(16385)


def test_release_rings_no_doorbell_while_nobody_waits(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    worker.alloc_output(worker.output_capacity)
    with pytest.raises(OutputArenaExhausted):
        worker.alloc_output(64, timeout=0)  # waited, gave up: no longer waiting
    gateway.release_outputs(worker.output_capacity)
    assert not _readable(gateway.release_fd)
    assert worker.alloc_output(64, timeout=0) == 0


def test_held_ranges_released_out_of_order_come_back_as_a_contiguous_prefix(
    pair: tuple[Channel, Channel],
) -> None:
    gateway, worker = pair
    quarter = worker.output_capacity // 4
    ends = []
    for _ in range(3):  # three runs, each closing its range [previous end, end)
        worker.alloc_output(quarter)
        ends.append(worker.output_allocated)
        assert gateway.hold_outputs(ends[-1])
    assert not gateway.hold_outputs(ends[-1])  # a run that allocated nothing holds nothing
    assert gateway.outputs_held == 3
    gateway.release_outputs(ends[2], held=True)  # the newest first: the older two still hold
    gateway.release_outputs(ends[1], held=True)
    assert gateway.outputs_held == 1 and gateway.output_used == 3 * quarter
    worker.alloc_output(quarter)  # the last free quarter
    with pytest.raises(OutputArenaExhausted):
        worker.alloc_output(64, timeout=0)  # released ranges behind a held one stay taken
    gateway.release_outputs(worker.output_allocated)  # an unheld newer range: still behind
    assert gateway.output_used == 4 * quarter
    gateway.release_outputs(ends[0], held=True)  # the prefix is released: all of it returns
    assert gateway.outputs_held == 0 and gateway.output_used == 0
    assert worker.alloc_output(64, timeout=0) == 0


def test_a_held_range_is_not_released_by_an_unheld_release_of_the_same_end(
    pair: tuple[Channel, Channel],
) -> None:
    gateway, worker = pair
    worker.alloc_output(worker.output_capacity)
    end = worker.output_allocated
    assert gateway.hold_outputs(end)
    gateway.release_outputs(end)  # a later reply that allocated nothing names the same end
    assert gateway.output_used == worker.output_capacity and gateway.outputs_held == 1
    with pytest.raises(OutputArenaExhausted):
        worker.alloc_output(64, timeout=0)
    gateway.release_outputs(end, held=True)
    assert worker.alloc_output(64, timeout=0) == 0


def test_output_readers_are_read_only(pair: tuple[Channel, Channel]) -> None:
    gateway, worker = pair
    offset = worker.alloc_output(64)
    write_tensor(worker.output_view(offset, 64), np.arange(4, dtype=np.float32))
    array = read_tensor(gateway.output_reader(offset, 64), "float32", [4])
    assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 1.0
    np.testing.assert_array_equal(array, [0, 1, 2, 3])
    del array


class _Waiting(logging.Handler):
    """Sets :attr:`event` when the channel logs that the worker is about to sleep for space."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "waiting for" in record.getMessage():
            self.event.set()


@pytest.fixture
def waiting() -> Iterator[_Waiting]:
    logger = logging.getLogger("channel.shm.channel")
    handler, level = _Waiting(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_a_waiting_worker_wakes_on_the_release_doorbell(
    pair: tuple[Channel, Channel], waiting: _Waiting
) -> None:
    gateway, worker = pair
    worker.alloc_output(worker.output_capacity // 2)
    worker.alloc_output(worker.output_capacity // 2)
    result: dict[str, Any] = {}

    def alloc() -> None:
        try:
            result["offset"] = worker.alloc_output(64, timeout=WAIT_S)
        except OutputArenaExhausted as exc:
            result["error"] = exc

    thread = threading.Thread(target=alloc)
    thread.start()
    try:
        assert waiting.event.wait(WAIT_S), "the worker never waited"
        assert "offset" not in result  # still waiting: nothing was released
        gateway.release_outputs(worker.output_capacity // 2)
    finally:
        thread.join(WAIT_S)
    assert not thread.is_alive()
    assert result == {"offset": 0}  # woken by the doorbell, long before its timeout
    assert not _readable(gateway.release_fd)  # the worker drained it


def test_fds_are_the_ones_a_worker_inherits() -> None:
    with Channel.create(index=5, input_bytes=1, output_bytes=1) as channel:
        assert channel.index == 5
        assert channel.fds == (
            channel.memfd,
            channel.submit_fd,
            channel.complete_fd,
            channel.release_fd,
        )
        assert channel.input_capacity == channel.output_capacity == os.sysconf("SC_PAGE_SIZE")


def test_close_is_idempotent_and_closes_every_descriptor() -> None:
    channel = Channel.create(index=0, input_bytes=4096, output_bytes=4096)
    view = channel.input_view(0, 16)  # still exported: close must not fail
    fds = channel.fds
    channel.close()
    channel.close()
    assert channel.closed
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)
    view[0] = 1  # the mapping lives as long as the view
    view.release()
    with pytest.raises(ValueError, match="closed"):
        channel.input_view(0, 1)


def test_mapping_refuses_memory_that_is_not_a_channel() -> None:
    fd = os.memfd_create("not-a-channel")
    os.ftruncate(fd, 8192)
    event = os.eventfd(0)
    try:
        with pytest.raises(ValueError, match="does not hold a tensorgate channel"):
            Channel(index=0, memfd=fd, submit_fd=event, complete_fd=event, release_fd=event)
    finally:
        os.close(fd)
        os.close(event)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"index": -1}, "index must be >= 0"),
        ({"input_bytes": 0}, "input_bytes and output_bytes must be >= 1"),
        ({"ring_slots": 0}, "ring_slots must be >= 1"),
        ({"slot_bytes": 100}, "slot_bytes must be a multiple of 8"),
    ],
)
def test_create_validates_its_layout(kwargs: dict[str, int], message: str) -> None:
    args: dict[str, Any] = {"index": 0, "input_bytes": 4096, "output_bytes": 4096, **kwargs}
    with pytest.raises(ValueError, match=message):
        Channel.create(**args)


class _Doorbells:
    """Counts eventfd writes per descriptor (the doorbells rung)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rung: dict[int, int] = {}
        real = os.eventfd_write

        def write(fd: int, value: int) -> None:
            self.rung[fd] = self.rung.get(fd, 0) + 1
            real(fd, value)

        monkeypatch.setattr(os, "eventfd_write", write)


def test_replies_ring_once_per_gateway_wakeup_and_a_wakeup_drains_them_all(
    pair: tuple[Channel, Channel], monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway, worker = pair
    bells = _Doorbells(monkeypatch)
    worker.post_completion(b"a")  # the gateway sleeps from the start: rung
    worker.post_completion(b"b")  # already rung, not yet drained: silent
    assert bells.rung == {worker.complete_fd: 1}
    assert gateway.completions() == [b"a", b"b"]
    assert not _readable(gateway.complete_fd)
    worker.post_completion(b"c")  # the gateway sleeps again after draining
    assert bells.rung == {worker.complete_fd: 2}
    assert gateway.completions() == [b"c"]


def test_requests_ring_only_while_the_worker_sleeps(
    pair: tuple[Channel, Channel], monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway, worker = pair
    bells = _Doorbells(monkeypatch)
    for message in (b"1", b"2", b"3"):
        gateway.submit(message)  # the worker has not said it sleeps: no syscall
    assert bells.rung == {}
    assert worker.wait_submissions(0) == [b"1", b"2", b"3"]
    got: list[bytes] = []
    sleeper = threading.Thread(target=lambda: got.extend(worker.wait_submissions(WAIT_S)))
    sleeper.start()
    deadline = time.monotonic() + WAIT_S
    while not gateway.worker_sleeps and time.monotonic() < deadline:
        pass  # the worker thread announces its sleep in the shared header
    gateway.submit(b"4")
    gateway.submit(b"5")
    sleeper.join(WAIT_S)
    assert bells.rung == {gateway.submit_fd: 1}  # one doorbell for the two
    assert got + worker.wait_submissions(0) == [b"4", b"5"]


def test_no_wakeup_is_lost_when_both_ends_sleep_and_wake_in_turn(
    pair: tuple[Channel, Channel],
) -> None:
    gateway, worker = pair
    rounds = 2000

    def echo() -> None:
        seen = 0
        while seen < rounds:
            for message in worker.wait_submissions(WAIT_S):
                worker.post_completion(message)
                seen += 1

    thread = threading.Thread(target=echo)
    thread.start()
    received: list[bytes] = []
    sent = 0
    while len(received) < rounds:
        while sent < rounds and sent - len(received) < gateway.ring_slots:
            gateway.submit(str(sent).encode())
            sent += 1
        assert select.select([gateway.complete_fd], [], [], WAIT_S)[0], "a wake-up was lost"
        received += gateway.completions()
    thread.join(WAIT_S)
    assert received == [str(i).encode() for i in range(rounds)]
