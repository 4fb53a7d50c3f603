"""The output area's space: held ranges come back as a contiguous prefix, a waiting worker wakes
on the release doorbell. Through a real channel (both ends in this process, the worker end on
duplicated fds), and on a bare header."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from channel.shm.channel import Channel
from channel.shm.output_area import OutputArea, OutputArenaExhausted
from channel.shm.payload import read_tensor, write_tensor
from channel.shm.segment import W_OUT_ALLOCATED, W_OUT_RELEASED, W_OUT_WAITING
from tests.channel.shm.ends import readable

WAIT_S = 30.0
"""Upper bound of every wait on the other thread (never reached when things work)."""


# -- through a channel, both ends in this process ----------------------------------------------


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
    assert not readable(gateway.release_fd)
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
    logger = logging.getLogger("channel.shm.output_area")
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
    assert not readable(gateway.release_fd)  # the worker drained it


# -- on a bare header ---------------------------------------------------------------------------

CAPACITY = 4096


@pytest.fixture
def bare() -> Iterator[tuple[OutputArea, memoryview, int]]:
    """An area over a header in ordinary memory, with its own release eventfd."""
    words = memoryview(bytearray(4096)).cast("Q")
    fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
    try:
        yield OutputArea(words, CAPACITY, fd, index=0), words, fd
    finally:
        os.close(fd)


def test_positions_are_published_in_the_header(bare: tuple[OutputArea, memoryview, int]) -> None:
    area, words, _ = bare
    assert area.alloc(100, timeout=0) == 0
    assert words[W_OUT_ALLOCATED] == area.allocated == 128  # 64-byte aligned
    assert area.used == 128
    area.release(128)
    assert words[W_OUT_RELEASED] == 128 and area.used == 0


def test_the_released_position_moves_over_the_contiguous_prefix_only(
    bare: tuple[OutputArea, memoryview, int],
) -> None:
    area, words, _ = bare
    ends = []
    for _ in range(3):
        area.alloc(64, timeout=0)
        ends.append(area.allocated)
        assert area.hold(ends[-1])
    area.release(ends[1], held=True)
    area.release(ends[2], held=True)
    assert words[W_OUT_RELEASED] == 0 and area.held == 1
    area.release(ends[0], held=True)
    assert words[W_OUT_RELEASED] == ends[2] and area.held == 0


def test_release_rings_only_a_waiting_worker_and_clears_its_word(
    bare: tuple[OutputArea, memoryview, int],
) -> None:
    area, words, fd = bare
    area.alloc(64, timeout=0)
    area.release(64)
    assert not readable(fd)
    area.alloc(64, timeout=0)
    words[W_OUT_WAITING] = 1  # as a worker announces before it sleeps
    area.release(128)
    assert readable(fd) and words[W_OUT_WAITING] == 0
    os.eventfd_read(fd)
    area.release(128)  # nothing new released: no doorbell
    assert not readable(fd)


def test_an_area_resumes_from_the_positions_in_its_header(
    bare: tuple[OutputArea, memoryview, int],
) -> None:
    _, words, fd = bare
    words[W_OUT_ALLOCATED] = words[W_OUT_RELEASED] = 3 * 1024
    area = OutputArea(words, CAPACITY, fd, index=0)
    assert not area.hold(3 * 1024)  # nothing was allocated after what is released
    assert area.alloc(1024, timeout=0) == 0  # nothing in use: back to the start of the area
    assert area.allocated == 5 * 1024  # positions go on from the header's: the tail is skipped


def test_a_worker_that_gives_up_waiting_clears_its_word(
    bare: tuple[OutputArea, memoryview, int],
) -> None:
    area, words, _ = bare
    area.alloc(CAPACITY, timeout=0)
    with pytest.raises(OutputArenaExhausted, match="after 0 s"):
        area.alloc(64, timeout=0)
    assert words[W_OUT_WAITING] == 0
