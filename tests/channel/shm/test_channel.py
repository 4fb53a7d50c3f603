"""The shared-memory channel, both ends in this process (the worker end on duplicated fds)."""

from __future__ import annotations

import os
import select
import threading
from typing import Any

import numpy as np
import pytest

from channel.shm.channel import Channel
from channel.shm.payload import read_tensor, write_tensor
from channel.shm.ring import ChannelFull
from tests.channel.shm.ends import readable
from tests.support.waits import until

WAIT_S = 30.0
"""Upper bound of every wait on the other thread (never reached when things work)."""


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
    assert not readable(gateway.complete_fd)
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
    until(lambda: gateway.worker_sleeps, "the worker thread announcing its sleep in the header")
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
