"""A channel's memory: a sealed memfd laid out as documented, refused when it holds no channel."""

from __future__ import annotations

import fcntl
import mmap
import os
from collections.abc import Iterator

import pytest

from channel.shm.segment import W_COMPLETE_SLEEPING, Segment, create_memfd, page_up

PAGE = mmap.PAGESIZE


@pytest.fixture
def memfd() -> Iterator[int]:
    fd = create_memfd("test-segment", 100, PAGE + 1, ring_slots=4, slot_bytes=128)
    try:
        yield fd
    finally:
        os.close(fd)


def test_page_up() -> None:
    assert [page_up(n) for n in (0, 1, PAGE, PAGE + 1)] == [0, PAGE, PAGE, 2 * PAGE]


def test_the_parts_are_page_rounded_and_named(memfd: int) -> None:
    segment = Segment(memfd)
    try:
        assert (segment.ring_slots, segment.slot_bytes) == (4, 128)
        assert (len(segment.input), len(segment.output)) == (PAGE, 2 * PAGE)
        # header, two rings (a page each), the two areas
        assert os.fstat(memfd).st_size == 4096 + 2 * PAGE + PAGE + 2 * PAGE
        assert segment.words[W_COMPLETE_SLEEPING] == 1  # the gateway counts as asleep at first
    finally:
        assert segment.close()


def test_both_mappings_share_the_memory(memfd: int) -> None:
    one, two = Segment(memfd), Segment(memfd)
    try:
        one.input[:3] = b"abc"
        one.submit.push(b"request")
        assert bytes(two.input[:3]) == b"abc"
        assert two.submit.pop_ready() == [b"request"]
    finally:
        one.close()
        two.close()


def test_the_size_is_sealed(memfd: int) -> None:
    seals = fcntl.fcntl(memfd, fcntl.F_GET_SEALS)
    assert seals & fcntl.F_SEAL_SHRINK and seals & fcntl.F_SEAL_GROW and seals & fcntl.F_SEAL_SEAL
    with pytest.raises(PermissionError):
        os.ftruncate(memfd, 1 << 20)


def test_close_says_whether_views_elsewhere_keep_the_mapping(memfd: int) -> None:
    segment = Segment(memfd)
    view = segment.input[:8]
    assert not segment.close()
    view.release()
    other = Segment(memfd)
    assert other.close()
    assert other.close()  # idempotent


@pytest.mark.parametrize(
    ("size", "message"),
    [(100, "does not hold a tensorgate channel"), (8192, "does not hold a tensorgate channel")],
    ids=["smaller-than-a-header", "zeroed"],
)
def test_memory_without_a_channel_is_refused(size: int, message: str) -> None:
    fd = os.memfd_create("not-a-channel")
    try:
        os.ftruncate(fd, size)
        with pytest.raises(ValueError, match=message):
            Segment(fd)
    finally:
        os.close(fd)


def test_a_header_whose_layout_exceeds_its_memfd_is_refused(memfd: int) -> None:
    header = os.pread(memfd, 4096, 0)
    fd = os.memfd_create("header-only")
    try:
        os.write(fd, header)  # a valid header, none of the parts it names
        with pytest.raises(ValueError, match="channel layout exceeds its memfd of 4096 bytes"):
            Segment(fd)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 1, 4, 64), "input_bytes and output_bytes must be >= 1, got 0, 1"),
        ((1, 1, 0, 64), "ring_slots must be >= 1, got 0"),
        ((1, 1, 4, 60), "slot_bytes must be a multiple of 8 and >= 64, got 60"),
        ((1, 1, 4, 68), "slot_bytes must be a multiple of 8 and >= 64, got 68"),
    ],
)
def test_create_refuses_a_layout_that_cannot_be(args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create_memfd("bad", *args)
