"""The producer's half of the need-wakeup handshake: ring only a consumer that said it sleeps."""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Iterator

import pytest

from channel.shm.doorbell import fence, ring_if_sleeping


@pytest.fixture
def eventfd() -> Iterator[int]:
    fd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
    try:
        yield fd
    finally:
        os.close(fd)


def _rung(fd: int) -> int:
    """How many times ``fd`` was rung since the last call (0: not readable)."""
    if not select.select([fd], [], [], 0)[0]:
        return 0
    return os.eventfd_read(fd)


def test_an_awake_consumer_costs_no_ring(eventfd: int) -> None:
    words = memoryview(bytearray(64)).cast("Q")
    ring_if_sleeping(words, 3, eventfd)
    assert _rung(eventfd) == 0


def test_a_sleeping_consumer_is_rung_once_and_its_word_cleared(eventfd: int) -> None:
    words = memoryview(bytearray(64)).cast("Q")
    words[3] = 1
    ring_if_sleeping(words, 3, eventfd)
    ring_if_sleeping(words, 3, eventfd)  # already rung, not asleep again: silent
    assert words[3] == 0
    assert _rung(eventfd) == 1
    assert list(words) == [0] * 8  # no other word touched


def test_fence_is_released_for_the_next_caller_on_any_thread() -> None:
    """Both sides fence on every handshake, from their own threads: a fence that stayed held
    after returning would block the other side's next fence (here: the join times out)."""
    fence()
    others = [threading.Thread(target=fence, daemon=True) for _ in range(3)]
    for other in others:
        other.start()
        other.join(5)
        assert not other.is_alive(), "fence() stayed held after it returned"
    fence()
